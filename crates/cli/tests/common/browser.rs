//! Headless Chromium for the live page's tests: find Debian's `chromium`
//! ([`chromium_or_skip`]: under `CI=true` a missing browser fails the test
//! instead of skipping it), render a page and dump its DOM after its
//! script ran ([`dump_dom`]), and pick elements out of the dump
//! ([`element_with`]).

use leasehold_testkit::in_ci;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bound on one Chromium run (start, load, 5 s of virtual time, dump).
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);
/// Virtual time the page gets before its DOM is dumped: several polls.
const VIRTUAL_TIME_BUDGET_MS: u32 = 5_000;

/// The first `<tag ...>...</tag>` in `html` whose start tag contains
/// `attributes` (elements of that tag are not nested in the dump).
pub fn element_with<'a>(html: &'a str, tag: &str, attributes: &str) -> &'a str {
    let open = format!("<{tag} ");
    let close = format!("</{tag}>");
    let mut from = 0;
    while let Some(at) = html[from..].find(&open) {
        let start = from + at;
        let start_tag_end = start + html[start..].find('>').expect("unterminated tag");
        let end = start + html[start..].find(&close).expect("unclosed element") + close.len();
        if html[start..start_tag_end].contains(attributes) {
            return &html[start..end];
        }
        from = start_tag_end;
    }
    panic!("no <{tag}> with {attributes} in the page:\n{html}");
}

/// Debian's `chromium`, or `None` when it is not on PATH: the caller then
/// skips `check` (this says so), except under `CI=true`, where `.ci/run`
/// installs it and its absence fails the test.
pub fn chromium_or_skip(check: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            !in_ci(),
            "CI=true but `chromium` is not on PATH: .ci/run must install it"
        );
        eprintln!("skipping {check}: `chromium` is not on PATH (apt-get install chromium, or run .ci/run)");
    }
    found
}

/// Debian's `chromium` on PATH.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("chromium"))
        .find(|candidate| candidate.is_file())
}

/// Loads `url` in headless Chromium (fresh profile), lets the page run for
/// [`VIRTUAL_TIME_BUDGET_MS`] of virtual time, and returns the DOM as HTML.
/// Killed, with its process group, after [`CHROMIUM_TIMEOUT`].
pub fn dump_dom(chromium: &Path, url: &str) -> String {
    let scratch = tempfile::tempdir().expect("tempdir");
    let dom_path = scratch.path().join("dom.html");
    let log_path = scratch.path().join("chromium.log");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.path().join("profile").display()
        ))
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}"))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&dom_path).expect("create dom file"))
        .stderr(std::fs::File::create(&log_path).expect("create log file"))
        .process_group(0)
        .spawn()
        .expect("spawn chromium");
    let log_tail = || {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    };
    let deadline = Instant::now() + CHROMIUM_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() >= deadline {
            let pid = child.id() as i32;
            // SAFETY: kill only sends a signal; chromium is not yet reaped,
            // so -pid still names its process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "chromium did not dump {url} within {CHROMIUM_TIMEOUT:?}; killed it. Its log:\n{}",
                log_tail()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = std::fs::read_to_string(&dom_path).expect("read the dumped DOM");
    assert!(
        status.success() && dom.contains("</html>"),
        "chromium failed ({status}) to dump {url}; stdout: {dom:?}; log:\n{}",
        log_tail()
    );
    dom
}
