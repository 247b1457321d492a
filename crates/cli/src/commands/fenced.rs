//! `leasehold fenced put KEY VALUE --lock NAME --token T` and `leasehold
//! fenced get KEY`: the built-in fenced store, for small shared state that
//! only a lock's current holder may write (a leader's address, a
//! checkpoint).
//!
//! A refused put exits 4 (ownership): `StaleToken` names the presented and
//! the key's highest token, `NotHolder` the holder's token, `NoSuchLock`
//! nearby names. A key that was never written is an answer, not an error:
//! `get` exits 0 and says so on stderr, or prints `{"key":…,"found":false}`
//! with `--json` (a script reads "not set yet" without parsing stderr).
//!
//! Values are bytes. `put` takes VALUE as text, or as hex with `--hex`.
//! `get` prints a value that is valid UTF-8 as text and any other value as
//! lowercase hex; `--json` says which in `"encoding"` (`"utf8"` or `"hex"`),
//! so a script can always recover the exact bytes.

use super::{consistency, lock_name, Global};
use crate::error::CliError;
use crate::output::print_json;
use leasehold_client::{Error, FencedKey, Token};
use serde_json::json;

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
    let key = fenced_key(&args.key)?;
    let lock = lock_name(&args.lock)?;
    let value = if args.hex {
        from_hex(&args.value)?
    } else {
        args.value.clone().into_bytes()
    };
    let client = global.client().await?;
    let revision = client
        .fenced_put(&key, value, &lock, Token(args.token))
        .await?;
    if args.json {
        print_json(&json!({
            "key": args.key,
            "lock": args.lock,
            "token": args.token,
            "revision": revision.0,
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
    let key = fenced_key(&args.key)?;
    let client = global.client().await?;
    let Some(found) = client.fenced_get(&key, consistency(args.stale)).await? else {
        if args.json {
            print_json(&json!({ "key": args.key, "found": false }));
        } else {
            eprintln!("no such key \"{}\" in the fenced store", args.key);
        }
        return Ok(());
    };
    let (text, encoding) = shown(&found.value);
    if args.json {
        print_json(&json!({
            "key": found.key,
            "found": true,
            "value": text,
            "encoding": encoding,
            "token": found.token.0,
            "lock": found.lock,
            "revision": found.revision.0,
        }));
    } else {
        println!(
            "{} = {text} (token {}, lock {})",
            found.key, found.token, found.lock
        );
    }
    Ok(())
}

/// Validates a key given on the command line before anything is sent.
fn fenced_key(raw: &str) -> Result<FencedKey, CliError> {
    Ok(FencedKey::parse(raw).map_err(Error::from)?)
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
