//! `leasehold events [PREFIX]`: what happened to locks (acquired, released,
//! expired, force-released, waiter-timed-out, release-failed), from the
//! answering node's memory of recent events (`Watch.Events`).
//!
//! Without `--follow` it prints the remembered events and exits; with it,
//! it then prints each new event as it happens until Ctrl-C or SIGTERM
//! (exit 0), or until the stream ends with an error (a follower that fell
//! too far behind, the server going away), which exits non-zero with a
//! message saying to reconnect. Output is one line per event, or with
//! `--json` one JSON array (without `--follow`) or one JSON object per line
//! (with it), each line flushed at once so a pipe sees every event as it
//! happens.

use super::Global;
use crate::error::{exit_for, CliError};
use crate::exit::Exit;
use crate::output::print_json;
use leasehold_client::wire::{event_json, Event};
use leasehold_client::{Error, EventStream, EventsQuery};
use serde_json::Value;
use std::io::Write;
use std::time::Duration;

/// `leasehold events`
#[derive(clap::Args, Debug)]
pub struct EventsArgs {
    /// Only events of locks whose name starts with this.
    #[arg(default_value = "")]
    pub prefix: String,
    /// After the remembered events, print each new one as it happens, until
    /// Ctrl-C or SIGTERM.
    #[arg(long)]
    pub follow: bool,
    /// Print JSON: one array, or with --follow one object per line.
    #[arg(long)]
    pub json: bool,
}

/// Runs `events`.
pub async fn run(args: EventsArgs, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    let query = EventsQuery {
        prefix: args.prefix.clone(),
        follow: args.follow,
        replay: 0,
    };
    // Bounded by --timeout until the server accepts the stream; a
    // follower then waits for events for as long as it runs.
    let stream = client.events(&query).await?;
    if args.follow {
        follow(stream, &args).await
    } else {
        let events = collect(stream, global.timeout).await?;
        print_all(&events, &args);
        Ok(())
    }
}

/// Reads a stream that ends by itself (no `--follow`), each message
/// bounded by `timeout`.
async fn collect(mut stream: EventStream, timeout: Duration) -> Result<Vec<Event>, CliError> {
    let mut events = Vec::new();
    loop {
        match tokio::time::timeout(timeout, stream.next()).await {
            Ok(Ok(Some(event))) => events.push(event),
            Ok(Ok(None)) => return Ok(events),
            Ok(Err(error)) => return Err(error.into()),
            Err(_) => return Err(stalled(timeout, events.len())),
        }
    }
}

/// No event, and no end of the stream, within `timeout`.
fn stalled(timeout: Duration, received: usize) -> CliError {
    let waited = leasehold_client::show::human(crate::duration::ms(timeout));
    CliError::new(
        Exit::Unavailable,
        format!(
            "the server sent no more events within {waited} (--timeout) \
             after {received} of them, nor ended the stream; retry"
        ),
    )
}

fn print_all(events: &[Event], args: &EventsArgs) {
    if args.json {
        print_json(&Value::Array(events.iter().map(event_json).collect()));
    } else if events.is_empty() {
        eprintln!("no remembered events for locks matching {:?}", args.prefix);
    } else {
        let columns = Columns::fitting(events);
        for event in events {
            println!("{}", event_line(event, &columns));
        }
    }
}

/// Prints each event as it arrives until a signal (exit 0), the stream's
/// end or error (non-zero), or stdout closing (exit 0: the reader is done).
async fn follow(mut stream: EventStream, args: &EventsArgs) -> Result<(), CliError> {
    let stopped = stop_signal();
    tokio::pin!(stopped);
    let mut stdout = std::io::stdout();
    loop {
        let next = tokio::select! {
            () = &mut stopped => return Ok(()),
            next = stream.next() => next,
        };
        let event = match next {
            Ok(Some(event)) => event,
            Ok(None) => {
                return Err(CliError::new(
                    Exit::Unavailable,
                    "the server ended the event stream (it may be shutting down); run \
                     `leasehold events --follow` again to reconnect (recent events are replayed first)",
                ))
            }
            Err(error) => return Err(stream_failed(error)),
        };
        let line = if args.json {
            event_json(&event).to_string()
        } else {
            event_line(&event, &Columns::MIN)
        };
        let written = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
        match written {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(error) => {
                return Err(CliError::new(
                    Exit::Other,
                    format!("cannot write to stdout: {error}"),
                ))
            }
        }
    }
}

/// The error of a follow stream that ended with `error`, saying to
/// reconnect unless the server's message already does. An open stream is
/// `Unavailable` when the connection broke (or stopped answering
/// keep-alive pings): the server did not end it.
fn stream_failed(error: Error) -> CliError {
    let mut message = error.to_string();
    if matches!(error, Error::Unavailable { .. }) {
        message = format!("lost the connection to the server ({message})");
    }
    message = format!("the event stream ended: {message}");
    if !message.contains("reconnect") {
        message.push_str(
            "; run `leasehold events --follow` again to reconnect (recent events are replayed first)",
        );
    }
    CliError::new(exit_for(&error), message)
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub(super) async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Widths of the human lines' columns: at least [`Columns::MIN`], and for
/// a batch ([`Columns::fitting`]) as wide as its widest value, so the
/// columns line up (a followed stream uses the minimums).
pub struct Columns {
    kind: usize,
    lock: usize,
    token: usize,
    lease: usize,
    owner: usize,
}

impl Columns {
    /// The longest kind (`fenced-put-refused`), and room for typical
    /// names, tokens, leases and owners.
    pub const MIN: Columns = Columns {
        kind: 18,
        lock: 16,
        token: 10,
        lease: 8,
        owner: 16,
    };

    /// Wide enough for every event of `events`.
    pub fn fitting(events: &[Event]) -> Columns {
        let widest = |min: usize, width: &dyn Fn(&Event) -> usize| {
            events.iter().map(width).fold(min, usize::max)
        };
        let min = Columns::MIN;
        Columns {
            kind: widest(min.kind, &|e| e.kind.chars().count()),
            lock: widest(min.lock, &|e| e.lock.chars().count()),
            token: widest(min.token, &|e| format!("token={}", e.token).len()),
            lease: widest(min.lease, &|e| format!("lease={}", e.lease).len()),
            owner: widest(min.owner, &|e| owner_field(e).chars().count()),
        }
    }
}

fn owner_field(event: &Event) -> String {
    let owner = if event.owner.is_empty() {
        "-"
    } else {
        &event.owner
    };
    format!("owner={owner}")
}

/// An event as one human line: local time, kind, lock, then `key=value`
/// fields (as in the server's log, so `grep token=…` works on both), in
/// `columns`.
pub fn event_line(event: &Event, columns: &Columns) -> String {
    let mut line = format!(
        "{}  {:<kind$}  {:<lock$}  {:<token$}  {:<lease$}  {:<owner$}  revision={}",
        leasehold_client::show::local_time(event.at_unix_ms),
        event.kind,
        event.lock,
        format!("token={}", event.token),
        format!("lease={}", event.lease),
        owner_field(event),
        event.revision,
        kind = columns.kind,
        lock = columns.lock,
        token = columns.token,
        lease = columns.lease,
        owner = columns.owner,
    );
    if !event.key.is_empty() {
        line.push_str(&format!(
            " key={} highest_token={} highest_lock={}",
            event.key,
            event.highest_token,
            if event.highest_lock.is_empty() {
                "-"
            } else {
                &event.highest_lock
            },
        ));
    }
    if !event.value.is_empty() {
        line.push_str(&format!(" value={:?}", event.value));
    }
    if !event.detail.is_empty() {
        line.push_str(&format!("  {}", event.detail));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Event {
        Event {
            kind: "force-released".into(),
            lock: "jobs/nightly".into(),
            lease: 7,
            owner: "alice@h1".into(),
            token: 42,
            revision: 99,
            at_unix_ms: 1_795_959_660_123,
            detail: "by bob@h2: holder hung".into(),
            ..Event::default()
        }
    }

    #[test]
    fn a_line_carries_every_field_in_order() {
        let line = event_line(&event(), &Columns::MIN);
        let fields = [
            "force-released",
            "jobs/nightly",
            "token=42",
            "lease=7",
            "owner=alice@h1",
            "revision=99",
            "by bob@h2: holder hung",
        ];
        let mut from = 0;
        for field in fields {
            let at = line[from..]
                .find(field)
                .unwrap_or_else(|| panic!("{field:?} missing or out of order in {line:?}"));
            from += at + field.len();
        }
        let unknown = Event {
            owner: String::new(),
            ..event()
        };
        assert!(event_line(&unknown, &Columns::MIN).contains("owner=-"));
    }

    #[test]
    fn a_batch_lines_up_whatever_the_widths() {
        let short = event();
        let long = Event {
            kind: "fenced-put-refused".into(),
            lock: "billing/invoices/2026-11/with-a-long-name".into(),
            token: 123_456_789_012,
            owner: "a-much-longer-owner@host".into(),
            ..event()
        };
        let batch = [short, long];
        let columns = Columns::fitting(&batch);
        let lines: Vec<String> = batch.iter().map(|e| event_line(e, &columns)).collect();
        for field in ["token=", "lease=", "owner=", "revision="] {
            let at: Vec<usize> = lines.iter().map(|l| l.find(field).unwrap()).collect();
            assert_eq!(
                at[0], at[1],
                "{field} not aligned:\n{}\n{}",
                lines[0], lines[1]
            );
        }
    }

    #[test]
    fn json_has_the_documented_fields() {
        let value = event_json(&event());
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        let mut expected = [
            "at_unix_ms",
            "detail",
            "highest_lock",
            "highest_token",
            "key",
            "kind",
            "lease",
            "lock",
            "owner",
            "revision",
            "token",
            "value",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(value["token"], 42);
        assert_eq!(value["kind"], "force-released");
    }
}
