//! The run's report: per fault window, the operations, their rate, the
//! violations per property (with the evidence) and the liveness figures;
//! printed as text for people or as one JSON object (`--json`).

use crate::check::{Violation, PROPERTIES};
use crate::liveness::Liveness;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// One window of the schedule.
#[derive(Clone, Debug)]
pub struct WindowReport {
    pub fault: String,
    /// What was done, in words (which node, which side).
    pub detail: String,
    pub from_ms: u64,
    pub to_ms: u64,
    pub ops: u64,
    pub violations: Vec<Violation>,
    pub liveness: Liveness,
}

/// The whole run.
#[derive(Clone, Debug)]
pub struct Report {
    pub seed: u64,
    pub nodes: u64,
    pub windows: Vec<WindowReport>,
    /// Why the schedule stopped early (a fault could not be injected or
    /// undone): the windows before it, and the failed one, are still
    /// checked and reported.
    pub failed: Option<String>,
}

impl WindowReport {
    fn ops_per_s(&self) -> f64 {
        let seconds = (self.to_ms - self.from_ms).max(1) as f64 / 1000.0;
        self.ops as f64 / seconds
    }

    fn count(&self, property: &str) -> usize {
        self.violations
            .iter()
            .filter(|v| v.property() == property)
            .count()
    }
}

impl Report {
    /// Operations in all windows.
    pub fn ops(&self) -> u64 {
        self.windows.iter().map(|w| w.ops).sum()
    }

    /// Violations in all windows.
    pub fn violations(&self) -> usize {
        self.windows.iter().map(|w| w.violations.len()).sum()
    }

    /// The report as one JSON object.
    pub fn json(&self) -> Value {
        let faults: Vec<Value> = self
            .windows
            .iter()
            .map(|w| {
                let mut by_property = Map::new();
                for property in PROPERTIES {
                    by_property.insert(property.to_owned(), json!(w.count(property)));
                }
                let evidence: Vec<Value> = w
                    .violations
                    .iter()
                    .map(|v| json!({"property": v.property(), "what": v.to_string()}))
                    .collect();
                json!({
                    "fault": w.fault,
                    "detail": w.detail,
                    "from_ms": w.from_ms,
                    "to_ms": w.to_ms,
                    "ops": w.ops,
                    "ops_per_s": (w.ops_per_s() * 10.0).round() / 10.0,
                    "violations": by_property,
                    "evidence": evidence,
                    "longest_no_grant_ms": w.liveness.longest_no_grant_ms,
                    "passed_on": w.liveness.passed_on,
                    "pass_on_max_ms": w.liveness.pass_on_max_ms,
                    "pass_on_bound_ms": w.liveness.pass_on_bound_ms,
                })
            })
            .collect();
        json!({
            "seed": self.seed,
            "nodes": self.nodes,
            "ops": self.ops(),
            "violations": self.violations(),
            "failed": self.failed,
            "faults": faults,
        })
    }

    /// The report as a table for people, violations listed under it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<20} {:>7} {:>7} {:>10} {:>11} {:>15}  WHAT",
            "FAULT", "OPS", "OPS/S", "VIOLATIONS", "NO-GRANT-MS", "PASS-ON-MS/MAX"
        );
        for w in &self.windows {
            let pass_on = match w.liveness.passed_on {
                0 => "-".to_owned(),
                _ => format!(
                    "{}/{}",
                    w.liveness.pass_on_max_ms, w.liveness.pass_on_bound_ms
                ),
            };
            let _ = writeln!(
                out,
                "{:<20} {:>7} {:>7.0} {:>10} {:>11} {:>15}  {}",
                w.fault,
                w.ops,
                w.ops_per_s(),
                w.violations.len(),
                w.liveness.longest_no_grant_ms,
                pass_on,
                w.detail
            );
        }
        for w in &self.windows {
            for v in &w.violations {
                let _ = writeln!(out, "VIOLATION [{}] {}: {v}", w.fault, v.property());
            }
        }
        let _ = writeln!(
            out,
            "seed {}: {} ops, {} violations",
            self.seed,
            self.ops(),
            self.violations()
        );
        if let Some(failure) = &self.failed {
            let _ = writeln!(out, "the run failed, so the schedule stopped: {failure}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(failed: Option<String>) -> Report {
        let window = WindowReport {
            fault: "kill-leader".into(),
            detail: "killed node 2 (the leader)".into(),
            from_ms: 0,
            to_ms: 10_000,
            ops: 12_345,
            violations: Vec::new(),
            liveness: Liveness::default(),
        };
        Report {
            seed: 16,
            nodes: 3,
            windows: vec![window],
            failed,
        }
    }

    #[test]
    fn a_run_that_stopped_early_still_reports_what_ran_and_says_why() {
        let why =
            "fault disk-full: node 2 applied Some(14), not up to the leader's commit index 20";
        let stopped = report(Some(why.into()));
        let json = stopped.json();
        assert_eq!(json["failed"], why);
        assert_eq!(json["ops"], 12_345);
        assert_eq!(json["faults"][0]["fault"], "kill-leader");
        let text = stopped.text();
        assert!(text.contains("kill-leader"), "{text}");
        assert!(
            text.contains(&format!("the schedule stopped: {why}")),
            "{text}"
        );
        let whole = report(None);
        assert!(whole.json()["failed"].is_null());
        assert!(!whole.text().contains("stopped"));
    }
}
