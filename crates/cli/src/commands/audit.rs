//! `leasehold audit [--follow] [--json]`: the replicated audit trail (force
//! releases, auth changes, membership changes, refused requests), oldest
//! first; with `--follow`, new records as they are applied. Needs `admin`
//! on "" while auth is enabled.

use super::Global;
use crate::error::CliError;
use crate::output::print_json;
use leasehold_client::wire::AuditRecord;
use serde_json::json;

/// `leasehold audit`
#[derive(clap::Args, Debug)]
pub struct AuditArgs {
    /// Keep printing new records until interrupted.
    #[arg(long)]
    follow: bool,
    /// One JSON object per line.
    #[arg(long)]
    json: bool,
    /// Start at this record number (0: the oldest remembered).
    #[arg(long, default_value_t = 0)]
    from: u64,
}

/// Runs `audit`.
pub async fn run(args: AuditArgs, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    let mut stream = client.audit(args.from, args.follow).await?;
    while let Some(record) = stream.next().await? {
        if args.json {
            print_json(&record_json(&record));
        } else {
            println!("{}", record_line(&record));
        }
    }
    Ok(())
}

fn record_json(r: &AuditRecord) -> serde_json::Value {
    json!({
        "seq": r.seq, "at_unix_ms": r.at_unix_ms, "kind": r.kind,
        "principal": r.principal, "verb": r.verb, "name": r.name, "detail": r.detail,
    })
}

fn record_line(r: &AuditRecord) -> String {
    let who = if r.principal.is_empty() {
        "anonymous"
    } else {
        &r.principal
    };
    let verb = if r.verb.is_empty() { "-" } else { &r.verb };
    let name = if r.name.is_empty() { "-" } else { &r.name };
    format!(
        "{} {} {} {who} {verb} {name}: {}",
        r.seq, r.at_unix_ms, r.kind, r.detail
    )
}
