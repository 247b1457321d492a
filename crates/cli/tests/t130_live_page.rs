//! The live page at `/` with a real `leasehold serve`.
//!
//! - **In a browser**: a lock acquired through the CLI shows up in the page
//!   as rendered by Debian's headless Chromium (the DOM after the page's
//!   script has polled the server), with its token and owner, and its
//!   `acquired` event with the token. A lock named and owned like HTML is
//!   shown as text: no element is made from it. Without Chromium the test
//!   is skipped, except under `CI=true` (where `.ci/run` installs it), where
//!   it fails.
//! - **Over HTTP**: `/api/locks` carries the lock, holder, owner and token
//!   as JSON, names with `<script>` come back as JSON strings, filtering by
//!   prefix works, `/api/events` returns the newest events last, and a bad
//!   query parameter is a 400 that names it and its limit.

mod common;

#[path = "../../server/tests/support/prometheus.rs"]
mod prometheus;

use common::{phase, u64_of, Server};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bound on one Chromium run (start, load, 5 s of virtual time, dump).
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);
/// Virtual time the page gets before its DOM is dumped: several polls.
const VIRTUAL_TIME_BUDGET_MS: u32 = 5_000;

/// A name and an owner an attacker would choose: if the page put either
/// into the DOM as HTML, the dump would hold an `<img>` element.
const HOSTILE_NAME: &str = "page/<img src=x onerror=\"document.title='pwned'\">";
const HOSTILE_OWNER: &str = "<b>mallory</b>";

#[test]
fn t130_live_page_in_chromium() {
    let Some(chromium) = chromium() else {
        assert!(
            !in_ci(),
            "CI=true but `chromium` is not on PATH: .ci/run must install it"
        );
        eprintln!("skipping t130_live_page_in_chromium: `chromium` is not on PATH (apt-get install chromium, or run .ci/run)");
        return;
    };
    let server = Server::start();

    phase("acquire a lock and a hostile-looking one through the CLI");
    let (token, _) = acquire(&server, "page/demo", "page-test-owner");
    let (hostile_token, _) = acquire(&server, HOSTILE_NAME, HOSTILE_OWNER);

    phase("render the page in headless Chromium and dump its DOM");
    let started = Instant::now();
    let dom = dump_dom(&chromium, &format!("{}/", server.endpoint()));
    eprintln!("chromium rendered the page in {:?}", started.elapsed());

    phase("the lock's row shows its token, owner and a lease countdown");
    let row = element_with(&dom, "tr", r#"data-lock="page/demo""#);
    assert!(
        row.contains(&format!(r#"<td class="token">{token}</td>"#)),
        "no token {token} in the lock's row: {row}"
    );
    assert!(
        row.contains(r#"<td class="owner">page-test-owner</td>"#),
        "no owner in the lock's row: {row}"
    );
    assert!(
        row.contains(r#"<td class="remaining"#) && row.contains(" s</td>"),
        "no lease countdown in the lock's row: {row}"
    );

    phase("the events table has the acquisition with its token");
    let events = element_with(&dom, "tbody", r#"id="event-rows""#);
    let acquired = element_with(
        events,
        "tr",
        r#"data-kind="acquired" data-event-lock="page/demo""#,
    );
    assert!(
        acquired.contains(&format!(r#"<td class="token">{token}</td>"#)),
        "no token {token} in the acquired event: {acquired}"
    );

    phase("the hostile name and owner are text, not markup");
    assert!(
        !dom.contains("<img") && !dom.contains("<b>mallory"),
        "user input became markup: {dom}"
    );
    assert!(
        dom.contains(
            r#"<td class="name">page/&lt;img src=x onerror="document.title='pwned'"&gt;</td>"#
        ),
        "the hostile lock is not shown as text: {dom}"
    );
    assert!(
        dom.contains(&format!(r#"<td class="token">{hostile_token}</td>"#))
            && dom.contains(r#"<td class="owner">&lt;b&gt;mallory&lt;/b&gt;</td>"#),
        "the hostile lock's holder is not shown: {dom}"
    );
    assert!(dom.contains("<title>Leasehold: locks</title>"), "{dom}");
    assert!(
        dom.contains(r#"<p id="unreachable" hidden="""#),
        "the page says the server is unreachable: {dom}"
    );
}

#[test]
fn t130_live_page_http() {
    let server = Server::start();
    let (token, lease) = acquire(&server, "page/http", "http-test-owner");
    let script_name = "page/<script>alert(1)</script>";
    let (script_token, _) = acquire(&server, script_name, "owner</td>");

    phase("/ serves the page and /page.js its script");
    let (status, page) = get(&server, "/");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(r#"<script src="/page.js"></script>"#),
        "{page}"
    );
    let (status, script) = get(&server, "/page.js");
    assert_eq!(status, 200, "{script}");
    assert!(script.contains("/api/locks"), "{script}");

    phase("/api/locks has the lock with its holder, owner and token");
    let locks = get_json(&server, "/api/locks?prefix=page%2F");
    assert_eq!(locks["truncated"], false, "{locks}");
    assert_eq!(locks["node_id"], 1, "{locks}");
    assert!(u64_of(&locks, "revision") >= script_token, "{locks}");
    assert!(u64_of(&locks, "server_time_unix_ms") > 0, "{locks}");
    let lock = find_lock(&locks, "page/http");
    let holder = &lock["holder"];
    assert_eq!(u64_of(holder, "token"), token, "{lock}");
    assert_eq!(u64_of(holder, "lease"), lease, "{lock}");
    assert_eq!(holder["owner"]["owner"], "http-test-owner", "{lock}");
    assert_eq!(u64_of(holder, "lease_ttl_ms"), 60_000, "{lock}");
    let remaining = u64_of(holder, "lease_remaining_ms");
    assert!(remaining > 0 && remaining <= 60_000, "{lock}");
    assert_eq!(lock["waiters"], Value::Array(vec![]), "{lock}");

    phase("a name with <script> is a JSON string, byte for byte");
    let scripted = find_lock(&locks, script_name);
    assert_eq!(u64_of(&scripted["holder"], "token"), script_token);
    assert_eq!(scripted["holder"]["owner"]["owner"], "owner</td>");

    phase("the prefix filters; percent-encoding is decoded");
    let only = get_json(&server, "/api/locks?prefix=page%2F%3Cscript");
    let names: Vec<&str> = only["locks"]
        .as_array()
        .expect("locks")
        .iter()
        .map(|lock| lock["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, [script_name], "{only}");
    let none = get_json(&server, "/api/locks?prefix=elsewhere%2F");
    assert_eq!(none["locks"], Value::Array(vec![]), "{none}");

    phase("/api/events: the last N, newest last");
    let events = get_json(&server, "/api/events?limit=1");
    let events = events["events"].as_array().expect("events");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["kind"], "acquired");
    assert_eq!(events[0]["lock"], script_name);
    assert_eq!(u64_of(&events[0], "token"), script_token);
    let all = get_json(&server, "/api/events");
    let all = all["events"].as_array().expect("events");
    let tokens: Vec<u64> = all.iter().map(|e| u64_of(e, "token")).collect();
    assert_eq!(tokens, [token, script_token], "{all:?}");

    phase("bad parameters are refused, naming the parameter and its limit");
    for bad in ["limit=0", "limit=ten", "limit=1025", "limit=-1"] {
        let (status, body) = get(&server, &format!("/api/events?{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body.contains("limit") && body.contains("1024"),
            "{bad}: {body}"
        );
    }
    let (status, body) = get(&server, "/api/events?limt=5");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"limt\""), "{body}");
    let long = format!("/api/locks?prefix={}", "a".repeat(513));
    let (status, body) = get(&server, &long);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("prefix") && body.contains("NAME_BYTES_MAX"),
        "{body}"
    );

    phase("the 404 points at the page");
    let (status, body) = get(&server, "/nope");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("/ (the live page)"), "{body}");
}

/// Acquires `name` for `owner` under a fresh 60 s lease; returns (token, lease).
fn acquire(server: &Server, name: &str, owner: &str) -> (u64, u64) {
    let acquired = server.ok_json(&["acquire", name, "--ttl", "60s", "--owner", owner, "--json"]);
    assert_eq!(acquired["lock"], name, "{acquired}");
    (u64_of(&acquired, "token"), u64_of(&acquired, "lease"))
}

/// `GET path` on the server's HTTP port: (status, body).
fn get(server: &Server, path: &str) -> (u16, String) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(prometheus::http_get(&server.endpoint(), path))
}

/// `GET path` answered 200 with JSON.
fn get_json(server: &Server, path: &str) -> Value {
    let (status, body) = get(server, path);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {body}"))
}

/// The lock named `name` in an `/api/locks` reply.
fn find_lock<'a>(locks: &'a Value, name: &str) -> &'a Value {
    locks["locks"]
        .as_array()
        .expect("locks")
        .iter()
        .find(|lock| lock["name"] == name)
        .unwrap_or_else(|| panic!("no lock {name:?} in {locks}"))
}

/// The first `<tag ...>...</tag>` in `html` whose start tag contains
/// `attributes` (elements of that tag are not nested in the dump).
fn element_with<'a>(html: &'a str, tag: &str, attributes: &str) -> &'a str {
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

/// Whether this is a CI run (`CI=true`), where a missing browser fails.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| ci == "true")
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
fn dump_dom(chromium: &Path, url: &str) -> String {
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
