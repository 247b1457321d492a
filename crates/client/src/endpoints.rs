//! Which server the client talks to. The user gives several endpoints; the
//! client uses one at a time and moves on when it fails: to the leader a
//! follower names, else to the next endpoint in the list (wrapping around).
//! A generation number makes a failure reported by many calls at once move
//! the client only once. `https://` endpoints use TLS, `http://` ones and
//! bare `host:port` plaintext; a leader a follower names (a bare address)
//! is reached with the scheme of the endpoint in use.

use crate::error::Error;
use crate::tls::TlsConfigs;
use std::sync::Mutex;
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Endpoint;

/// A connection as calls use it: every request on it carries the client's
/// bearer token, added here and nowhere else.
pub(crate) type Channel = InterceptedService<tonic::transport::Channel, Bearer>;

/// Adds `authorization: Bearer <secret>` to every request (nothing without
/// a token).
#[derive(Clone, Debug, Default)]
pub(crate) struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    /// The interceptor for `secret` (`None`: no token). Fails for a secret
    /// that cannot be a header value.
    pub fn new(secret: Option<&str>) -> Result<Bearer, Error> {
        let Some(secret) = secret else {
            return Ok(Bearer(None));
        };
        let value =
            format!("Bearer {}", secret.trim())
                .parse()
                .map_err(|_| Error::InvalidArgument {
                    field: "auth_token".into(),
                    reason: "must be printable ASCII (a token from leasehold token create)".into(),
                })?;
        Ok(Bearer(Some(value)))
    }
}

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The endpoints and the one in use.
#[derive(Debug)]
pub(crate) struct Endpoints {
    /// Every endpoint the user gave, normalized to URLs.
    urls: Vec<String>,
    /// How to open a connection to one of them.
    dial: Dial,
    /// The bearer token every call carries.
    bearer: Bearer,
    current: Mutex<Current>,
}

/// How a connection is opened and kept: the connect bound, the HTTP/2
/// keep-alive pings and TLS (see [`ClientOptions`](crate::ClientOptions)).
#[derive(Clone, Debug)]
pub(crate) struct Dial {
    /// Bound on connecting.
    pub connect_timeout: Duration,
    /// Ping interval (and unanswered-ping bound); `None`: no pings.
    pub keep_alive_interval: Option<Duration>,
    /// TLS for `https://` endpoints; `None`: no CA given, so none can be used.
    pub tls: Option<TlsConfigs>,
}

#[derive(Debug)]
struct Current {
    /// Index in `urls`; a leader address outside the list keeps the index
    /// of the endpoint that named it, so the next failover continues there.
    index: usize,
    url: String,
    channel: tonic::transport::Channel,
    /// Bumped at every move.
    generation: u64,
    /// The endpoint that last failed without naming a leader.
    unreachable: Option<String>,
}

/// What [`Endpoints::fail_over`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moved {
    /// To the leader a follower named: retry at once.
    ToLeader,
    /// To the next endpoint: retry after a backoff.
    ToNext,
    /// Nothing: another call moved first (or the hint was unusable).
    Already,
}

/// The endpoint a call should use.
#[derive(Clone, Debug)]
pub(crate) struct InUse {
    /// The channel.
    pub channel: Channel,
    /// Its URL, for messages.
    pub url: String,
    /// Pass back to [`Endpoints::fail_over`].
    pub generation: u64,
}

impl Endpoints {
    /// Validates `raw` and connects to the first reachable endpoint.
    pub async fn connect<I, S>(raw: I, dial: Dial) -> Result<Endpoints, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<String> = raw
            .into_iter()
            .map(|u| u.as_ref().trim().to_owned())
            .filter(|u| !u.is_empty())
            .map(|u| normalize(&u))
            .collect();
        if urls.is_empty() {
            return Err(Error::InvalidArgument {
                field: "endpoints".into(),
                reason: "no endpoint given; pass e.g. http://127.0.0.1:7420".into(),
            });
        }
        for url in &urls {
            endpoint(url, &dial)?;
        }
        let mut failures = Vec::new();
        let mut mismatches = Vec::new();
        for (index, url) in urls.iter().enumerate() {
            let connected = endpoint(url, &dial)?.connect().await;
            if let (Ok(_), Some(tls)) = (&connected, &dial.tls) {
                let check = tls.check.clone();
                let limit = dial.connect_timeout;
                if let Some(sentence) = crate::tls::check_handshake(url, check, limit).await {
                    mismatches.push(sentence);
                    continue;
                }
            }
            match connected {
                Ok(channel) => {
                    let current = Current {
                        index,
                        url: url.clone(),
                        channel,
                        generation: 0,
                        unreachable: None,
                    };
                    return Ok(Endpoints {
                        urls,
                        dial,
                        bearer: Bearer::default(),
                        current: Mutex::new(current),
                    });
                }
                Err(e) => match crate::tls::explain(&e, Some(url)) {
                    Some(sentence) => mismatches.push(sentence),
                    None => failures.push(format!("{url} ({})", root_cause(&e))),
                },
            }
        }
        if !mismatches.is_empty() {
            return Err(Error::Unavailable {
                message: mismatches.join("; "),
            });
        }
        Err(Error::Unavailable {
            message: format!(
                "cannot reach any endpoint: tried {}; is `leasehold serve` running there?",
                failures.join(", ")
            ),
        })
    }

    /// The same endpoints, every call carrying `bearer`.
    pub fn with_bearer(self, bearer: Bearer) -> Endpoints {
        Endpoints { bearer, ..self }
    }

    /// The endpoint to use now.
    pub fn in_use(&self) -> InUse {
        let current = self.current.lock().expect("endpoints lock");
        InUse {
            channel: InterceptedService::new(current.channel.clone(), self.bearer.clone()),
            url: current.url.clone(),
            generation: current.generation,
        }
    }

    /// The endpoint of `generation` failed: move to `leader_addr` if given
    /// (and it is not the endpoint that last failed unreachable: followers
    /// keep naming a dead leader until they elect a new one), else to the
    /// next endpoint. A no-op if another call already moved. The new channel
    /// connects lazily, on first use. Returns [`Moved::ToLeader`] when the
    /// move follows a fresh hint, which is worth trying at once.
    pub fn fail_over(&self, generation: u64, leader_addr: Option<&str>) -> Moved {
        let mut current = self.current.lock().expect("endpoints lock");
        if current.generation != generation {
            return Moved::Already;
        }
        let hint = leader_addr
            .map(|addr| with_scheme_of(&current.url, addr))
            .filter(|url| current.unreachable.as_ref() != Some(url));
        if leader_addr.is_none() {
            current.unreachable = Some(current.url.clone());
        }
        let (index, url, moved) = match hint {
            Some(url) => (current.index, url, Moved::ToLeader),
            None => {
                let next = (current.index + 1) % self.urls.len();
                (next, self.urls[next].clone(), Moved::ToNext)
            }
        };
        // Every listed URL was validated at connect; a leader address that
        // does not parse leaves the client where it is.
        let Ok(endpoint) = endpoint(&url, &self.dial) else {
            return Moved::Already;
        };
        current.index = index;
        current.url = url;
        current.channel = endpoint.connect_lazy();
        current.generation += 1;
        moved
    }
}

/// Accepts `host:port` as shorthand for `http://host:port`.
pub(crate) fn normalize(url: &str) -> String {
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    }
}

/// The URL of `addr` (a leader a follower named: `host:port`, or a URL)
/// with the scheme of `in_use`, so a TLS client stays on TLS.
fn with_scheme_of(in_use: &str, addr: &str) -> String {
    if addr.contains("://") {
        return addr.to_owned();
    }
    match in_use.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://{addr}"),
        None => normalize(addr),
    }
}

fn endpoint(url: &str, dial: &Dial) -> Result<Endpoint, Error> {
    let invalid = |reason: String| Error::InvalidArgument {
        field: "endpoints".into(),
        reason,
    };
    let e = Endpoint::from_shared(url.to_owned())
        .map_err(|e| invalid(format!("{url:?} is not a valid URL: {e}")))?;
    let e = e.connect_timeout(dial.connect_timeout).tcp_nodelay(true);
    let e = match dial.keep_alive_interval {
        Some(interval) => e
            .http2_keep_alive_interval(interval)
            .keep_alive_timeout(interval)
            .keep_alive_while_idle(true),
        None => e,
    };
    if !url.starts_with("https://") {
        return Ok(e);
    }
    let Some(tls) = dial.tls.clone() else {
        return Err(invalid(format!(
            "{url} is an https:// endpoint: pass the CA of its certificate (--cacert, \
             ClientOptions::tls.ca_pem), or use http:// for a plaintext server"
        )));
    };
    e.tls_config(tls.tonic.timeout(dial.connect_timeout))
        .map_err(|e| invalid(format!("TLS settings for {url}: {e}")))
}

/// The innermost error's text ("Connection refused (os error 111)").
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_host_port_gets_a_scheme() {
        assert_eq!(normalize("127.0.0.1:7420"), "http://127.0.0.1:7420");
        assert_eq!(normalize("https://h:1"), "https://h:1");
    }

    const DIAL: Dial = Dial {
        connect_timeout: Duration::from_secs(1),
        keep_alive_interval: None,
        tls: None,
    };

    #[test]
    fn a_leader_hint_keeps_the_scheme_in_use() {
        assert_eq!(with_scheme_of("https://a:1", "b:2"), "https://b:2");
        assert_eq!(with_scheme_of("http://a:1", "b:2"), "http://b:2");
        assert_eq!(with_scheme_of("https://a:1", "http://b:2"), "http://b:2");
    }

    #[tokio::test]
    async fn an_https_endpoint_without_a_ca_is_refused_before_connecting() {
        let error = Endpoints::connect(["https://127.0.0.1:1"], DIAL)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("--cacert"), "{error}");
    }

    #[tokio::test]
    async fn an_empty_list_or_a_bad_url_is_refused_before_connecting() {
        let empty: [&str; 0] = [];
        assert!(matches!(
            Endpoints::connect(empty, DIAL).await,
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            Endpoints::connect(["http://bad host:1"], DIAL).await,
            Err(Error::InvalidArgument { .. })
        ));
    }

    #[tokio::test]
    async fn nothing_reachable_lists_what_was_tried() {
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = dead.local_addr().unwrap();
        drop(dead);
        let error = Endpoints::connect([addr.to_string()], DIAL)
            .await
            .unwrap_err();
        assert!(error.to_string().contains(&addr.to_string()), "{error}");
    }
}
