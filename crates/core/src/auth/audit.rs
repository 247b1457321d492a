//! The audit trail: a bounded, replicated record of force releases, auth
//! changes, membership changes and refused requests. Records are appended in
//! apply (so every node holds the same trail, in snapshots too), numbered by
//! a sequence that never repeats, so a follower resumes after the last
//! number it saw. The oldest records go first past
//! [`crate::limits::AUDIT_RECORDS_REMEMBERED`].

use super::Verb;
use crate::limits::{self, Limit};
use crate::LockError;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What an audit record is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuditKind {
    /// A lock was force-released.
    ForceRelease,
    /// Roles, users, tokens, quotas or the enabled flag changed.
    AuthChange,
    /// The cluster's membership changed.
    Membership,
    /// A request was refused (unauthenticated, no permission, not the
    /// lease's principal).
    Refused,
}

impl AuditKind {
    /// The kind's word (`force_release`), for JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditKind::ForceRelease => "force_release",
            AuditKind::AuthChange => "auth_change",
            AuditKind::Membership => "membership",
            AuditKind::Refused => "refused",
        }
    }
}

/// An audit entry as proposed (the server's refusals and membership
/// changes) or made in apply; [`AuditLog::push`] numbers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// What it is about.
    pub kind: AuditKind,
    /// Who asked (`""`: anonymous).
    pub principal: String,
    /// The verb asked for, if one applies.
    pub verb: Option<Verb>,
    /// The lock name or prefix concerned (`""`: none).
    pub name: String,
    /// What happened or why it was refused.
    pub detail: String,
}

impl AuditEntry {
    /// Checks the entry's sizes (a proposed entry is client-influenced).
    pub fn validate(&self) -> Result<(), LockError> {
        let max = limits::AUDIT_TEXT_BYTES_MAX;
        for (field, text) in [
            ("audit.principal", &self.principal),
            ("audit.name", &self.name),
            ("audit.detail", &self.detail),
        ] {
            if text.len() > max {
                return Err(LockError::over_limit(
                    field,
                    Limit::AuditTextBytesMax,
                    format!(
                        "is {} bytes; the limit AUDIT_TEXT_BYTES_MAX is {max}",
                        text.len()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// One numbered audit record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Position in the trail: strictly increasing, never reused.
    pub seq: u64,
    /// Proposer's wall time (display only).
    pub at_unix_ms: u64,
    /// The entry.
    pub entry: AuditEntry,
}

/// The bounded trail.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditLog {
    /// The sequence number of the next record.
    next_seq: u64,
    /// The newest records, oldest first.
    records: VecDeque<AuditRecord>,
}

impl AuditLog {
    /// Appends `entry` (texts cut to [`limits::AUDIT_TEXT_BYTES_MAX`] so a
    /// record made in apply never fails), forgetting the oldest past the
    /// limit, and returns the record.
    pub fn push(&mut self, mut entry: AuditEntry, at_unix_ms: u64) -> &AuditRecord {
        for text in [&mut entry.principal, &mut entry.name, &mut entry.detail] {
            truncate(text, limits::AUDIT_TEXT_BYTES_MAX);
        }
        if self.records.len() == limits::AUDIT_RECORDS_REMEMBERED {
            self.records.pop_front();
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.records.push_back(AuditRecord {
            seq,
            at_unix_ms,
            entry,
        });
        assert!(self.records.len() <= limits::AUDIT_RECORDS_REMEMBERED);
        self.records.back().expect("just pushed")
    }

    /// Records with `seq >= from`, oldest first.
    pub fn since(&self, from: u64) -> impl DoubleEndedIterator<Item = &AuditRecord> {
        let start = self.records.partition_point(|r| r.seq < from);
        self.records.range(start..)
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}
