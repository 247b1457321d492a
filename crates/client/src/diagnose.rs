//! The verdicts of `leasehold diagnose`, as pure functions of what was
//! observed: two samples of the same locks an interval apart, the server's
//! memory of failed releases, and whether each owner's process runs here.
//!
//! The runbook this encodes: an orphaned lock's countdown is static between
//! two samples a renewal interval apart, a live renewer's deadline moves
//! outward; a renewer that has gone on far longer than holds under the same
//! prefix usually last may have outlived its work; an owner whose pid is not
//! running (or runs another process) on this host is gone; a release that
//! named a missing lock close to one the same owner holds went to the wrong
//! key; waiters queued for many ttls are starving; and a server whose wall
//! clock disagrees with ours shows misleading times (but never expires
//! anything by wall time). Every verdict carries the evidence behind it.
//!
//! They live in the client library, not the command line, so every client
//! (the `leasehold` command, a dashboard, a script in Rust) reaches the same
//! verdicts from the same observations, without linking the server.

use crate::show::{self, ms_between};
use crate::wire::{FailedRelease, Holder, LockInfo, LockKind, OwnerInfo};
use crate::OwnerProcess;
use leasehold_core::nearby::looks_alike;
use leasehold_core::LockName;

/// A diagnosis, most specific first: a lock gets the first that applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// The owner released a missing name close to this held one.
    WrongKeyRelease,
    /// The owner's process is not running on this host.
    OwnerGone,
    /// Not renewed between the samples: the countdown is static.
    Orphaned,
    /// Renewed far longer than holds under this prefix usually last.
    RenewingPastWork,
    /// Waiters queued longer than several ttls.
    StarvingWaiters,
    /// Renewing, held within its usual time.
    Healthy,
    /// The server's wall clock and this host's disagree (not about a lock).
    ClockSkew,
}

impl Verdict {
    /// The verdict's stable name, as printed and in `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::WrongKeyRelease => "wrong-key-release",
            Verdict::OwnerGone => "owner-gone",
            Verdict::Orphaned => "orphaned",
            Verdict::RenewingPastWork => "renewing-past-work",
            Verdict::StarvingWaiters => "starving-waiters",
            Verdict::Healthy => "healthy",
            Verdict::ClockSkew => "clock-skew",
        }
    }
}

/// When a finding applies.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// Waiters are starving after this many of the holder's ttls.
    pub starve_ttls: u64,
    /// A hold is past its work beyond this multiple of the prefix's p99...
    pub past_work_factor: u64,
    /// ...and at least this much longer than the p99, in ms...
    pub past_work_slack_ms: u64,
    /// ...given at least this many recorded holds under the prefix.
    pub past_work_min_holds: u32,
    /// Wall clocks further apart than this are skewed, in ms.
    pub max_skew_ms: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            starve_ttls: 3,
            past_work_factor: 4,
            past_work_slack_ms: 1_000,
            past_work_min_holds: 5,
            max_skew_ms: 1_000,
        }
    }
}

/// One line of `diagnose`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    /// The lock (`None` for a server-wide finding such as clock skew).
    pub lock: Option<String>,
    /// The most specific finding.
    pub verdict: Verdict,
    /// Every finding that applies, most specific first.
    pub findings: Vec<Verdict>,
    /// What was observed, one fact per line.
    pub evidence: Vec<String>,
    /// What an operator can do about it.
    pub advice: String,
    /// The holder's token in the second sample, if the lock was held.
    pub token: Option<u64>,
    /// The holder's lease in the second sample.
    pub lease: Option<u64>,
    /// The holder's owner name in the second sample.
    pub owner: Option<String>,
}

/// What diagnose observed about one lock.
pub struct Observed<'a> {
    /// The lock in the first sample, if it existed then.
    pub first: Option<&'a LockInfo>,
    /// The lock in the second sample.
    pub second: &'a LockInfo,
    /// Time between the samples, on this host's monotonic clock.
    pub elapsed_ms: u64,
    /// The server's wall time at the second sample (for "ago" and waits).
    pub now_unix_ms: i64,
}

/// Classifies one lock. `failed` is the server's memory of failed releases;
/// `process` tells whether an owner's process runs here.
pub fn classify(
    seen: &Observed,
    failed: &[FailedRelease],
    limits: &Thresholds,
    process: &dyn Fn(&OwnerInfo) -> OwnerProcess,
) -> Diagnosis {
    let lock = seen.second;
    let mut findings = Vec::new();
    let mut evidence = Vec::new();
    let mut advice = Vec::new();
    let mut judge = |seen: &Observed, holder: &Holder| {
        for (verdict, facts, what_to_do) in holder_findings(seen, holder, failed, limits, process) {
            if let Some(verdict) = verdict {
                findings.push(verdict);
                advice.push(what_to_do);
            }
            evidence.extend(facts);
        }
    };
    if let Some(holder) = &lock.holder {
        judge(seen, holder);
    } else if !lock.holders.is_empty() {
        // A semaphore or read-write lock: each grant is judged as a
        // lock's holder would be, on a view of the name holding just it.
        for grant in &lock.holders {
            let first = seen.first.map(|first| holding_only(first, grant.token));
            let second = holding_only(lock, grant.token);
            let grant_seen = Observed {
                first: first.as_ref(),
                second: &second,
                ..*seen
            };
            judge(&grant_seen, grant);
        }
    } else if lock.lock_delay_remaining_ms > 0 {
        evidence.push(format!(
            "free, in its lock delay for {} more",
            show::approx(lock.lock_delay_remaining_ms)
        ));
    } else if let Some(head) = lock.waiters.first() {
        // Listed while free: kept for the head, which waits for it and
        // other locks at once.
        evidence.push(format!(
            "free, kept for lease {} (first in line, it waits for several locks at once)",
            head.lease
        ));
    } else {
        evidence.push("free".into());
    }
    if let Some((facts, what_to_do)) = starving(seen, limits) {
        findings.push(Verdict::StarvingWaiters);
        evidence.extend(facts);
        advice.push(what_to_do);
    }
    findings.sort();
    let holder = lock.holder.as_ref();
    Diagnosis {
        lock: Some(lock.name.clone()),
        verdict: findings.first().copied().unwrap_or(Verdict::Healthy),
        findings: if findings.is_empty() {
            vec![Verdict::Healthy]
        } else {
            findings
        },
        evidence,
        advice: advice.first().cloned().unwrap_or_default(),
        token: holder.map(|h| h.token),
        lease: holder.map(|h| h.lease),
        owner: holder
            .and_then(|h| h.owner.as_ref())
            .map(|o| o.owner.clone()),
    }
}

/// A finding (if any), the facts behind it, and what to do.
type Found = Option<(Option<Verdict>, Vec<String>, String)>;

/// What is found about one holder (a lock's, or one grant of a semaphore
/// or read-write lock): the facts and findings of each check, in order.
fn holder_findings(
    seen: &Observed,
    holder: &Holder,
    failed: &[FailedRelease],
    limits: &Thresholds,
    process: &dyn Fn(&OwnerInfo) -> OwnerProcess,
) -> Vec<(Option<Verdict>, Vec<String>, String)> {
    let owner = holder.owner.clone().unwrap_or_default();
    let permits = match holder.permits {
        0 => String::new(),
        n => format!(" ({} permit(s))", n),
    };
    let held = format!(
        "held by lease {} token {}{}{permits} owner {}, for {}",
        holder.lease,
        holder.token,
        if holder.fenced { " (fenced)" } else { "" },
        show::owner(&owner),
        show::approx(holder.held_ms),
    );
    let found = [
        Some((None, vec![held], String::new())),
        wrong_key(seen, failed),
        owner_gone(&owner, process),
        renewal(seen, holder.token),
        past_work(seen.second, limits),
    ];
    found.into_iter().flatten().collect()
}

/// `lock` as if `token`'s grant were its one holder (a semaphore's or
/// read-write lock's grant, judged alone); its kind stays.
fn holding_only(lock: &LockInfo, token: u64) -> LockInfo {
    LockInfo {
        holder: lock.holders.iter().find(|h| h.token == token).cloned(),
        holders: Vec::new(),
        ..lock.clone()
    }
}

/// The shortest lease ttl among `lock`'s holder or grants (`None`: free).
pub fn shortest_ttl_ms(lock: &LockInfo) -> Option<u64> {
    let holders = lock.holder.iter().chain(&lock.holders);
    holders.map(|holder| holder.lease_ttl_ms).min()
}

/// How to free the hold of `holder` on `lock` now: a lock is
/// force-released, a grant's lease revoked.
fn free_now(lock: &LockInfo, holder: &Holder) -> String {
    match lock.kind() {
        LockKind::Lock => format!(
            "`leasehold force-release {} --token {} --reason ...`",
            lock.name, holder.token
        ),
        _ => format!("`leasehold lease revoke {}`", holder.lease),
    }
}

/// A failed release by the holder's own lease, since it got the lock, that
/// named a missing lock looking like this one (same leaf under another
/// prefix or hash tag, or a near spelling). The lease is the owner's
/// identity here: owner names are often shared (a worker pool, or every
/// CLI call's default `host:leasehold`), and matching on them would blame
/// one holder for another's mistake.
fn wrong_key(seen: &Observed, failed: &[FailedRelease]) -> Found {
    let lock = seen.second;
    let holder = lock.holder.as_ref()?;
    let miss = failed.iter().rev().find(|f| {
        f.lease == holder.lease
            && f.name != lock.name
            && f.at_unix_ms >= holder.acquired_unix_ms
            && looks_alike(&f.name, &lock.name)
    })?;
    let who = format!("its owner {} (same lease {})", miss.owner, miss.lease);
    let facts = vec![format!(
        "{who} tried to release {:?} (token {}) {} ago and was told: {}; it holds {:?} (token {}): the release went to the wrong key",
        miss.name,
        miss.token,
        show::approx(ms_between(miss.at_unix_ms, seen.now_unix_ms)),
        miss.error,
        lock.name,
        holder.token,
    )];
    let advice = format!(
        "fix the name the holder releases ({:?} is not {:?}); this lock stays held until its lease ends or {}",
        miss.name,
        lock.name,
        free_now(lock, holder)
    );
    Some((Some(Verdict::WrongKeyRelease), facts, advice))
}

/// The owner's process is gone from this host (or its pid was reused).
fn owner_gone(owner: &OwnerInfo, process: &dyn Fn(&OwnerInfo) -> OwnerProcess) -> Found {
    let who = format!(
        "owner {} on host {} pid {} started {}",
        owner.owner,
        owner.host,
        owner.pid,
        show::local_time(owner.process_start_unix_ms as i64)
    );
    let process = process(owner);
    let fact = format!("{who}: {}", process.describe(owner));
    if matches!(process, OwnerProcess::Running | OwnerProcess::OtherHost) {
        return Some((None, vec![fact], String::new()));
    }
    let advice = "the holder's process is gone: if anything still renews its lease it is a leftover; wait for the lease to end or free it (force-release a lock, revoke a grant's lease)".to_owned();
    Some((Some(Verdict::OwnerGone), vec![fact], advice))
}

/// Renewed between the samples (a live renewer), or a static countdown
/// (an orphan), or too short a sample to tell.
fn renewal(seen: &Observed, token: u64) -> Found {
    let second = seen.second.holder.as_ref()?;
    let first = seen.first.and_then(|l| l.holder.as_ref());
    let elapsed = show::approx(seen.elapsed_ms);
    let Some(first) = first.filter(|f| f.token == token && f.lease == second.lease) else {
        let before = first.map_or("free".to_owned(), |f| format!("token {}", f.token));
        return Some((
            None,
            vec![format!(
                "changed hands during the {elapsed} sampled ({before} → token {token})"
            )],
            String::new(),
        ));
    };
    let countdown = format!(
        "lease countdown {} → {} of {}",
        show::approx(first.lease_remaining_ms),
        show::approx(second.lease_remaining_ms),
        show::human(second.lease_ttl_ms)
    );
    if second.renewals > first.renewals {
        // Where the deadline went: remaining now + time passed − remaining then.
        let moved_ms =
            (second.lease_remaining_ms + seen.elapsed_ms).saturating_sub(first.lease_remaining_ms);
        let fact = format!(
            "renewed {} time(s) in {elapsed} (renewals {} → {}): {countdown}; its deadline moved {} later (a live renewer)",
            second.renewals - first.renewals,
            first.renewals,
            second.renewals,
            show::approx(moved_ms)
        );
        return Some((None, vec![fact], String::new()));
    }
    let expected_interval_ms = second.lease_ttl_ms / 3;
    if seen.elapsed_ms < expected_interval_ms {
        let fact = format!(
            "not renewed in {elapsed}, which is shorter than its usual renewal interval (ttl/3 = {}): inconclusive; run with --interval {}",
            show::approx(expected_interval_ms),
            show::human(expected_interval_ms.div_ceil(1_000) * 1_000)
        );
        return Some((None, vec![fact], String::new()));
    }
    let next = match seen.second.waiters.first() {
        Some(waiter) => format!(
            "then lease {} owner {} gets it",
            waiter.lease,
            waiter.owner.as_ref().map_or("-".into(), show::owner)
        ),
        None => "nobody waits for it".to_owned(),
    };
    let delay = match second.lock_delay_ms {
        0 => String::new(),
        ms => format!(" after a lock delay of {}", show::human(ms)),
    };
    let facts = vec![
        format!(
            "not renewed in {elapsed} (renewals {} → {}, last renewal {} ago): {countdown}; the deadline did not move (a static countdown)",
            first.renewals,
            second.renewals,
            show::approx(ms_between(second.lease_renewed_unix_ms, seen.now_unix_ms))
        ),
        format!(
            "will expire in {}; {next}{delay}",
            show::approx(second.lease_remaining_ms)
        ),
    ];
    let advice = format!(
        "nothing renews it: it frees itself in {}; to free it now, {}",
        show::approx(second.lease_remaining_ms),
        free_now(seen.second, second)
    );
    Some((Some(Verdict::Orphaned), facts, advice))
}

/// Held far longer than the usual hold under its prefix.
fn past_work(lock: &LockInfo, limits: &Thresholds) -> Found {
    let holder = lock.holder.as_ref()?;
    if lock.prefix_holds < limits.past_work_min_holds {
        return None;
    }
    let p99 = lock.prefix_hold_p99_ms;
    let usual = format!(
        "holds under {:?} usually end within {} (p99 of the last {})",
        LockName::prefix_of(&lock.name),
        show::approx(p99),
        lock.prefix_holds
    );
    let past = holder.held_ms > p99.saturating_mul(limits.past_work_factor)
        && holder.held_ms >= p99.saturating_add(limits.past_work_slack_ms);
    if !past || holder.renewals == 0 {
        return Some((None, vec![usual], String::new()));
    }
    let fact = format!(
        "held for {} and still renewed ({} renewals), {}× the usual; {usual}",
        show::approx(holder.held_ms),
        holder.renewals,
        holder.held_ms / p99.max(1)
    );
    let advice = "the renewer may have outlived the work: check that the holder's work is still running (a leaked guard or a background renewer keeps a finished job's lock); set --max-hold to bound it".to_owned();
    Some((Some(Verdict::RenewingPastWork), vec![fact], advice))
}

/// Waiters queued longer than `starve_ttls` of the holder's ttl.
fn starving(seen: &Observed, limits: &Thresholds) -> Option<(Vec<String>, String)> {
    let lock = seen.second;
    // A semaphore's or read-write lock's queue waits on every grant: the
    // shortest lease among them sets the bound.
    let ttl_ms = shortest_ttl_ms(lock)?;
    let head = lock.waiters.first()?;
    let waited = ms_between(head.since_unix_ms, seen.now_unix_ms);
    let bound = ttl_ms.saturating_mul(limits.starve_ttls);
    if waited <= bound {
        return None;
    }
    let fact = format!(
        "{} waiter(s); the head, lease {} owner {}, has waited {}, more than {} × the holder's ttl {}",
        lock.waiters.len(),
        head.lease,
        head.owner.as_ref().map_or("-".into(), show::owner),
        show::approx(waited),
        limits.starve_ttls,
        show::human(ttl_ms)
    );
    let advice = "the holder keeps the lock while others wait: check it is making progress; bound holds with --max-hold, or split the lock".to_owned();
    Some((vec![fact], advice))
}

/// The clock-skew finding, if the server's wall clock is further from ours
/// than `max_skew_ms`: `offset_ms` = server − this host (midpoint of the
/// call), `uncertainty_ms` = half the call's round trip.
pub fn clock_skew(
    offset_ms: i64,
    uncertainty_ms: u64,
    node_id: u64,
    limits: &Thresholds,
) -> Option<Diagnosis> {
    let distance = offset_ms.unsigned_abs().saturating_sub(uncertainty_ms);
    if distance <= limits.max_skew_ms {
        return None;
    }
    let direction = if offset_ms > 0 { "ahead of" } else { "behind" };
    Some(Diagnosis {
        lock: None,
        verdict: Verdict::ClockSkew,
        findings: vec![Verdict::ClockSkew],
        evidence: vec![
            format!(
                "node {node_id}'s wall clock is {} {direction} this host's (±{uncertainty_ms}ms), more than the {} allowed",
                show::approx(offset_ms.unsigned_abs()),
                show::approx(limits.max_skew_ms)
            ),
            "reported only: no lease expiry uses wall time, but times shown (acquired at, last renewal) are off by that much".into(),
        ],
        advice: "synchronise the clocks (chrony or NTP) on the server and this host".into(),
        token: None,
        lease: None,
        owner: None,
    })
}

#[cfg(test)]
mod tests;
