//! Holder processes: workload clients in processes of their own, so that
//! a holder can be SIGSTOPped for real (the `pause-holder-process` fault),
//! as a JVM in a long GC pause or a VM frozen by its host is, rather than
//! only told to stop renewing (`pause-holder`, in-process).
//!
//! `leasehold-chaos holder ...` (hidden) is one such process
//! ([`child`]): it grants a lease kept alive at ttl/3, acquires one lock
//! with a wait, writes to the fenced key named as the lock with its token
//! a few times across about a ttl, releases, and starts again, until its
//! stdin closes (the run is done with it, or died) or its lifetime ends.
//! It goes through the workload's own [`Ops`](crate::workload::ops::Ops)
//! with a [`Recorder`](crate::recorder::Recorder) on the run's clock, so
//! it records exactly as an in-process worker does.
//!
//! What it says on stdout, one JSON [`Report`] a line: `hello` (its clock,
//! checked against the run's), every operation as it completes (the run
//! reads its grants from them, to pause a holder while it holds), and at
//! the end its whole history, which the run merges
//! ([`Recorder::merge`](crate::recorder::Recorder::merge)) so the checker
//! holds it to the same rules as the rest.
//!
//! [`process`] is the run's side of one holder process; [`pause`] is the
//! fault.

pub mod child;
pub mod pause;
pub mod process;

use crate::history::{History, OpRecord};
use serde::{Deserialize, Serialize};

/// The subcommand a run starts its holder processes with.
pub const SUBCOMMAND: &str = "holder";

/// One line a holder process writes on stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Report {
    /// First line: the process is up, and its clock reads `now_ms` (run ms).
    Hello {
        /// Its recorder's reading when it wrote the line.
        now_ms: u64,
    },
    /// One operation, as it completed.
    Op(OpRecord),
    /// Last line: everything it recorded.
    History(History),
}

impl Report {
    /// The line as written: JSON, no newline.
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("a report always encodes as JSON")
    }

    /// Parses one line a holder wrote.
    pub fn parse(line: &str) -> Result<Report, String> {
        serde_json::from_str(line).map_err(|e| format!("unreadable holder report {line:?}: {e}"))
    }
}

/// The `key=value` field `key` of an operation's `args` or `outcome`.
pub fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}
