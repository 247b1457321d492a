//! `leasehold fenced put KEY VALUE --lock NAME --token T` and `leasehold
//! fenced get KEY`: the built-in fenced store, for small shared state that
//! only a lock's current holder may write (a leader's address, a
//! checkpoint).
//!
//! A refused put exits 4 (ownership): `StaleToken` names the presented and
//! the key's highest token, `NotHolder` the holder's token, `NoSuchLock`
//! nearby names. A key that was never written also exits 4 ("no such key",
//! like `NoSuchLock` for locks).
//!
//! Values are bytes. `put` takes VALUE as text, or as hex with `--hex`.
//! `get` prints a value that is valid UTF-8 as text and any other value as
//! lowercase hex; `--json` says which in `"encoding"` (`"utf8"` or `"hex"`),
//! so a script can always recover the exact bytes.

use super::{revision, Global};
use crate::connect::request_id;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use leasehold_proto::v1::fenced_store_client::FencedStoreClient;
use leasehold_proto::v1::{FencedGetRequest, FencedPutRequest};
use serde_json::json;
use std::time::Duration;

/// `leasehold fenced`
#[derive(clap::Subcommand, Debug)]
pub enum FencedCmd {
    /// Writes KEY = VALUE as the holder of --lock with --token.
    Put(PutArgs),
    /// Reads KEY: its value and the token and lock of the last write.
    Get(GetArgs),
}

/// `leasehold fenced put`
#[derive(clap::Args, Debug)]
pub struct PutArgs {
    /// The key.
    pub key: String,
    /// The value (text; hex bytes with --hex).
    pub value: String,
    /// The lock whose holder writes.
    #[arg(long, value_name = "NAME")]
    pub lock: String,
    /// The holder's fencing token.
    #[arg(long, value_name = "T")]
    pub token: u64,
    /// VALUE is hex (two digits per byte), for binary values.
    #[arg(long)]
    pub hex: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// `leasehold fenced get`
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// The key.
    pub key: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Answer from the node reached, without a read barrier: any node
    /// answers (no leader needed), but the answer may be behind the leader's.
    #[arg(long)]
    pub stale: bool,
}

/// Runs a `fenced` subcommand.
pub async fn run(cmd: FencedCmd, global: &Global) -> Result<(), CliError> {
    match cmd {
        FencedCmd::Put(args) => put(args, global).await,
        FencedCmd::Get(args) => get(args, global).await,
    }
}

async fn put(args: PutArgs, global: &Global) -> Result<(), CliError> {
    let value = if args.hex {
        from_hex(&args.value)?
    } else {
        args.value.clone().into_bytes()
    };
    let mut conn = global.connect().await?;
    let request = FencedPutRequest {
        lock: args.lock.clone(),
        token: args.token,
        key: args.key.clone(),
        value,
        request_id: request_id(),
    };
    let reply = conn
        .call(Duration::ZERO, |ch| {
            let request = request.clone();
            async move { FencedStoreClient::new(ch).put(request).await }
        })
        .await?;
    if args.json {
        print_json(&json!({
            "key": args.key,
            "lock": args.lock,
            "token": args.token,
            "revision": revision(reply.header.as_ref()),
        }));
    } else {
        println!(
            "stored {} (token {}, lock {})",
            args.key, args.token, args.lock
        );
    }
    Ok(())
}

async fn get(args: GetArgs, global: &Global) -> Result<(), CliError> {
    let mut conn = global.connect().await?;
    let request = FencedGetRequest {
        key: args.key.clone(),
        stale: args.stale,
    };
    let reply = conn
        .call(Duration::ZERO, |ch| {
            let request = request.clone();
            async move { FencedStoreClient::new(ch).get(request).await }
        })
        .await?;
    if !reply.found {
        return Err(CliError::new(
            Exit::Ownership,
            format!("no such key \"{}\" in the fenced store", args.key),
        ));
    }
    let (text, encoding) = shown(&reply.value);
    if args.json {
        print_json(&json!({
            "key": reply.key,
            "value": text,
            "encoding": encoding,
            "token": reply.token,
            "lock": reply.lock,
            "revision": revision(reply.header.as_ref()),
        }));
    } else {
        println!(
            "{} = {text} (token {}, lock {})",
            reply.key, reply.token, reply.lock
        );
    }
    Ok(())
}

/// A value as text: itself if valid UTF-8, else lowercase hex.
fn shown(value: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(value) {
        Ok(text) => (text.to_owned(), "utf8"),
        Err(_) => (to_hex(value), "hex"),
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Result<Vec<u8>, CliError> {
    let bad = || {
        CliError::usage(format!(
            "--hex value {text:?} is not hex (two digits per byte)"
        ))
    };
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return Err(bad());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|_| bad()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_show_as_text_or_hex_and_hex_round_trips() {
        assert_eq!(shown(b"10.0.0.1:80"), ("10.0.0.1:80".into(), "utf8"));
        assert_eq!(shown(&[0xff, 0x00, 0x10]), ("ff0010".into(), "hex"));
        assert_eq!(from_hex("ff0010").unwrap(), vec![0xff, 0x00, 0x10]);
        assert!(from_hex("abc").is_err());
        assert!(from_hex("zz").is_err());
        assert!(from_hex("é1").is_err());
    }
}
