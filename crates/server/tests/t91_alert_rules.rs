//! `deploy/prometheus/alerts.yml` is a valid rule file whose queries name
//! only metrics a real server exports. With `promtool` on PATH it also runs
//! `promtool check rules`, and `promtool test rules` on the rule unit tests
//! of `deploy/prometheus/alerts_test.yml` (synthetic series: a leader whose
//! followers died, an isolated old leader beside a new one, a short
//! election, every node down). Without promtool those two are skipped,
//! except under `CI=true` (where `.ci/run` installs it), where they fail.
//! The structural check below always runs (the workspace has no YAML
//! crate: rules are read line by line, which the file's simple layout
//! allows).

#[path = "support/prometheus.rs"]
mod prometheus;

use leasehold_testkit::grpc::{acquire, acquire_now, grant, keep_alive, release};
use leasehold_testkit::TestServer;
use prometheus::Scrape;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn rules_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus")
}

fn rules_path() -> PathBuf {
    rules_dir().join("alerts.yml")
}

/// One rule as read from the file.
#[derive(Debug, Default)]
struct Rule {
    alert: String,
    expr: String,
    duration: Option<String>,
    severity: Option<String>,
    summary: Option<String>,
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Splits the file into rules at each `- alert:`; within a rule, reads
/// `expr:` (inline or a `|` block), `for:`, `labels: severity:` and
/// `annotations: summary:`.
fn read_rules(text: &str) -> Vec<Rule> {
    let lines: Vec<&str> = text.lines().collect();
    let mut rules: Vec<Rule> = Vec::new();
    let mut section = "";
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        i += 1;
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix("- alert:") {
            rules.push(Rule {
                alert: name.trim().to_owned(),
                ..Rule::default()
            });
            section = "";
            continue;
        }
        let Some(rule) = rules.last_mut() else {
            continue;
        };
        let (key, value) = trimmed.split_once(':').unwrap_or((trimmed, ""));
        let value = value.trim().trim_matches('"').to_owned();
        match (section, key) {
            (_, "expr") if value == "|" || value == "|-" => {
                let base = indent(line);
                while i < lines.len() && (lines[i].trim().is_empty() || indent(lines[i]) > base) {
                    rule.expr.push_str(lines[i].trim());
                    rule.expr.push(' ');
                    i += 1;
                }
            }
            (_, "expr") => rule.expr = value,
            (_, "for") => rule.duration = Some(value),
            (_, "labels") | (_, "annotations") => section = key,
            ("labels", "severity") => rule.severity = Some(value),
            ("annotations", "summary") => rule.summary = Some(value),
            _ => {}
        }
    }
    rules
}

/// PromQL words that are not metric names.
const KEYWORDS: &[&str] = &[
    "and", "or", "unless", "bool", "offset", "by", "without", "on",
];

/// Metric names an expression reads: identifiers outside strings, label
/// matchers `{}` and ranges `[]`, not called as functions, not keywords,
/// not label lists of `by (…)` / `without (…)`.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let chars: Vec<char> = expr.chars().collect();
    let (mut i, mut skip_group) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' => {
                i = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '"')
                    .map_or(chars.len(), |p| i + p + 2)
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                i = chars[i..]
                    .iter()
                    .position(|&c| c == close)
                    .map_or(chars.len(), |p| i + p + 1);
            }
            '(' if skip_group => {
                i = chars[i..]
                    .iter()
                    .position(|&c| c == ')')
                    .map_or(chars.len(), |p| i + p + 1);
                skip_group = false;
            }
            // Numbers and durations (`0.05`, `5m`) are not names.
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i]))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let rest: String = chars[i..].iter().collect();
                let rest = rest.trim_start();
                // `f(…)` is a call; `max by (le) (…)` an aggregation.
                let called = rest.starts_with('(')
                    || rest.starts_with("by ")
                    || rest.starts_with("by(")
                    || rest.starts_with("without");
                if ["by", "without", "on", "ignoring"].contains(&word.as_str()) {
                    skip_group = true;
                } else if !called && !KEYWORDS.contains(&word.as_str()) {
                    names.insert(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

fn valid_duration(raw: &str) -> bool {
    let digits = raw.trim_end_matches(|c: char| "smhdwy".contains(c));
    !digits.is_empty() && digits.len() < raw.len() && digits.chars().all(|c| c.is_ascii_digit())
}

/// Drives a server through grants, acquires, keep-alives, a queued acquire
/// and releases, so that every family the rules use has been touched.
async fn active_server_scrape() -> Scrape {
    let server = TestServer::start().await;
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
    let holder = grant(&mut leases, 10_000).await;
    let token = acquire_now(&mut locks, holder, "r").await;
    keep_alive(&mut leases, holder, 1).await;
    let waiter = grant(&mut leases, 10_000).await;
    let mut waiting = server.locks().await;
    let queued = tokio::spawn(async move { waiting.acquire(acquire(waiter, "r", 10_000)).await });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    locks
        .release(release(holder, "r", token))
        .await
        .expect("release");
    queued.await.unwrap().expect("granted from the queue");
    let scrape = Scrape::fetch(&server.endpoint).await;
    server.stop().await;
    scrape
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_is_complete_and_reads_exported_metrics() {
    let text = std::fs::read_to_string(rules_path()).expect("read alerts.yml");
    assert!(text.lines().any(|l| l.trim() == "groups:"), "no groups:");
    let rules = read_rules(&text);
    let alerts: BTreeSet<&str> = rules.iter().map(|r| r.alert.as_str()).collect();
    assert_eq!(alerts.len(), rules.len(), "duplicate alert names");
    for expected in [
        "LeaseholdKeepAliveMarginLow",
        "LeaseholdLeasesExpiring",
        "LeaseholdForceRelease",
        "LeaseholdWaitersStarving",
        "LeaseholdNoLeader",
        "LeaseholdLeaderWithoutQuorum",
        "LeaseholdLeaderChurn",
    ] {
        assert!(alerts.contains(expected), "{expected} missing: {alerts:?}");
    }

    let exported = active_server_scrape().await.names();
    for rule in &rules {
        let name = &rule.alert;
        assert!(!rule.expr.trim().is_empty(), "{name}: no expr");
        let duration = rule.duration.as_deref().unwrap_or_default();
        assert!(valid_duration(duration), "{name}: for: {duration:?}");
        let severity = rule.severity.as_deref().unwrap_or_default();
        assert!(
            ["critical", "warning", "info"].contains(&severity),
            "{name}: labels: severity: {severity:?}"
        );
        assert!(
            rule.summary.as_deref().is_some_and(|s| !s.is_empty()),
            "{name}: no annotations: summary:"
        );
        let used = metric_names(&rule.expr);
        assert!(
            !used.is_empty(),
            "{name}: expr reads no metric: {}",
            rule.expr
        );
        for metric in used {
            assert!(
                exported.contains(&metric),
                "{name}: {metric} is not exported by the server"
            );
        }
    }
}

#[test]
fn metric_names_skips_functions_labels_and_ranges() {
    let expr = "histogram_quantile(0.05, max by (le) (rate(a_bucket{x=\"y\"}[5m]))) < 0.3 \
                and max(b_total offset 5m) == 0";
    let names: Vec<String> = metric_names(expr).into_iter().collect();
    assert_eq!(names, ["a_bucket", "b_total"]);
}

/// Runs `promtool ARGS` in the rules' directory; `None` (the test skips)
/// if promtool is not on PATH, except under `CI=true`, where that fails.
fn promtool(args: &[&str]) -> Option<std::process::Output> {
    match std::process::Command::new("promtool")
        .args(args)
        .current_dir(rules_dir())
        .output()
    {
        Ok(output) => Some(output),
        Err(error) => {
            assert!(
                !leasehold_testkit::in_ci(),
                "CI=true but promtool cannot run ({error}): .ci/run must install it (Debian package prometheus)"
            );
            eprintln!("promtool not on PATH ({error}); skipped (apt-get install prometheus, or run .ci/run)");
            None
        }
    }
}

fn assert_success(what: &str, output: &std::process::Output) {
    assert!(
        output.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn promtool_accepts_the_rules_when_installed() {
    if let Some(output) = promtool(&["check", "rules", "alerts.yml"]) {
        assert_success("promtool check rules", &output);
    }
}

/// The alerts fire, and stay quiet, as `alerts_test.yml` says: among them
/// `LeaseholdNoLeader` fires when the only node left leads without a
/// quorum (its former `max(leasehold_raft_is_leader) < 1` never did), and
/// `LeaseholdLeaderWithoutQuorum` names that node.
#[test]
fn promtool_rule_tests_pass() {
    if let Some(output) = promtool(&["test", "rules", "alerts_test.yml"]) {
        assert_success("promtool test rules", &output);
    }
}
