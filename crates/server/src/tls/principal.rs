//! The names a certificate carries, and the principal (the identity that
//! permissions are granted to) of a client certificate: its first URI SAN
//! (a SPIFFE id, say), else its first DNS SAN, else its subject's common
//! name. The chain is verified by rustls before any of this is read; these
//! functions only parse.

use leasehold_core::auth::Principal;
use std::net::IpAddr;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

/// The names of one certificate, in the order the certificate lists them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertificateNames {
    /// URI subject alternative names.
    pub uris: Vec<String>,
    /// DNS subject alternative names.
    pub dns: Vec<String>,
    /// IP address subject alternative names.
    pub ips: Vec<IpAddr>,
    /// The subject's first common name (CN).
    pub common_name: Option<String>,
}

impl CertificateNames {
    /// True if the certificate names `host` (a DNS name, compared without
    /// case, or an IP address) in a SAN. The common name does not count,
    /// as in every current TLS client.
    pub fn names_host(&self, host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<IpAddr>() {
            Ok(ip) => self.ips.contains(&ip),
            Err(_) => self.dns.iter().any(|dns| dns.eq_ignore_ascii_case(host)),
        }
    }
}

/// The names in the DER certificate `der`; `None` if it does not parse.
pub fn certificate_names(der: &[u8]) -> Option<CertificateNames> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let mut names = CertificateNames::default();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::URI(uri) => names.uris.push((*uri).to_owned()),
                GeneralName::DNSName(dns) => names.dns.push((*dns).to_owned()),
                GeneralName::IPAddress(bytes) => names.ips.extend(ip(bytes)),
                _ => {}
            }
        }
    }
    names.common_name = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_owned);
    Some(names)
}

/// The principal of the DER client certificate `der`: its first URI SAN,
/// else its first DNS SAN, else its subject CN; `None` if it has none of
/// them (or does not parse).
pub fn certificate_principal(der: &[u8]) -> Option<String> {
    let names = certificate_names(der)?;
    let CertificateNames {
        uris,
        dns,
        common_name,
        ..
    } = names;
    uris.into_iter()
        .next()
        .or_else(|| dns.into_iter().next())
        .or(common_name)
        .filter(|principal| !principal.is_empty())
}

/// The principal a client's certificate chain names: its first (leaf)
/// certificate's [`certificate_principal`], if that is a valid principal.
/// rustls verified the chain during the handshake.
pub fn chain_principal(chain: &[rustls::pki_types::CertificateDer<'_>]) -> Option<Principal> {
    let name = certificate_principal(chain.first()?)?;
    Principal::parse(&name).ok()
}

fn ip(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, SanType};

    fn cert(sans: Vec<SanType>, cn: Option<&str>) -> Vec<u8> {
        let mut params = CertificateParams::default();
        params.subject_alt_names = sans;
        let mut subject = DistinguishedName::new();
        if let Some(cn) = cn {
            subject.push(DnType::CommonName, cn);
        }
        params.distinguished_name = subject;
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    fn dns(name: &str) -> SanType {
        SanType::DnsName(name.try_into().unwrap())
    }

    fn uri(name: &str) -> SanType {
        SanType::URI(name.try_into().unwrap())
    }

    #[test]
    fn a_uri_san_comes_first_then_a_dns_san_then_the_cn() {
        let all = cert(
            vec![dns("alice.example"), uri("spiffe://example/alice")],
            Some("Alice"),
        );
        assert_eq!(
            certificate_principal(&all).as_deref(),
            Some("spiffe://example/alice")
        );
        let dns_and_cn = cert(vec![dns("a.example"), dns("b.example")], Some("Alice"));
        assert_eq!(
            certificate_principal(&dns_and_cn).as_deref(),
            Some("a.example")
        );
        let cn_only = cert(vec![], Some("alice"));
        assert_eq!(certificate_principal(&cn_only).as_deref(), Some("alice"));
    }

    #[test]
    fn no_name_or_no_certificate_is_no_principal() {
        assert_eq!(certificate_principal(&cert(vec![], None)), None);
        assert_eq!(certificate_principal(b"not a certificate"), None);
    }

    #[test]
    fn hosts_are_matched_against_dns_and_ip_sans_only() {
        let der = cert(
            vec![
                dns("Node1.Example"),
                SanType::IpAddress("127.0.0.1".parse().unwrap()),
            ],
            Some("node9.example"),
        );
        let names = certificate_names(&der).unwrap();
        assert!(names.names_host("node1.example"));
        assert!(names.names_host("127.0.0.1"));
        assert!(!names.names_host("127.0.0.2"));
        assert!(!names.names_host("node9.example"), "the CN does not count");
    }
}
