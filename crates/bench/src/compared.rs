//! The report of a run against another service (`--target etcd`,
//! `--target redis`): the Leasehold run's [`Report`], with the service
//! named, its version, and what one cycle is there, so that figures from
//! two targets set side by side say what they compare.

use serde::Serialize;

use super::stats::Report;
use super::Print;

/// The service a run loaded, as reported.
pub(super) struct Compared<'a> {
    /// `etcd` or `redis`.
    pub(super) target: &'static str,
    /// The version the server reported.
    pub(super) version: &'a str,
    /// How it was set up, where that decides the figures (Redis's fsync
    /// policy); empty when nothing needs saying.
    pub(super) setup: String,
    /// What one cycle is on that service.
    pub(super) cycle: &'static str,
}

/// Prints `report` with `target` named: a line under the title, or leading
/// fields in the JSON object.
pub(super) fn print(report: &Report, target: &Compared<'_>, json: bool, print: Print) {
    #[derive(Serialize)]
    struct Targeted<'a> {
        target: &'static str,
        target_version: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        target_setup: &'a str,
        #[serde(flatten)]
        report: &'a Report,
    }
    if json {
        let targeted = Targeted {
            target: target.target,
            target_version: target.version,
            target_setup: &target.setup,
            report,
        };
        let line = serde_json::to_string(&targeted).expect("a report always serializes");
        print(format_args!("{line}\n"));
        return;
    }
    let setup = match target.setup.as_str() {
        "" => String::new(),
        setup => format!(", {setup}"),
    };
    let human = report.human();
    let (title, rest) = human.split_once('\n').unwrap_or((&human, ""));
    print(format_args!(
        "{title}\n  target   {} {}{setup} ({})\n{rest}",
        target.target, target.version, target.cycle
    ));
}
