//! `KEY=VALUE` flags (`--label`, `--metadata`). The lease owner itself is
//! built by the client library (`leasehold_client::owner_info`).

/// Parses a `--label` / `--metadata` value `KEY=VALUE`.
pub fn parse_key_value(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{raw:?} is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_need_a_key_and_an_equals_sign() {
        assert_eq!(parse_key_value("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_key_value("=x").is_err());
        assert!(parse_key_value("x").is_err());
    }
}
