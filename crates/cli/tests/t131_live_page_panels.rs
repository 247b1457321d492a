//! The live page's panels on a real 3-node cluster, in headless Chromium.
//!
//! - **Health**: a lock whose owner's process has exited shows the verdict
//!   `leasehold diagnose` gives it (`owner-gone`, and diagnose run beside
//!   the page agrees), with its advice in the tooltip; beside
//!   its lease countdown, coloured by the fraction of the ttl left, stands
//!   the ttl itself.
//! - **Queue**: a waiter queued behind it is listed with its owner and the
//!   time it has waited.
//! - **Cluster panel**: with one follower killed, the leader's page lists it
//!   unreachable, marks the leader, shows each member's lag and the quorum.
//! - **Charts**: the grants chart is an inline SVG with points, from the
//!   node's own counts (`/api/charts`, which refuses parameters with a 400).
//! - **Events**: the kind filter offers the kinds seen; times carry their
//!   zone.
//!
//! Without Chromium the browser half is skipped, except under `CI=true`.

mod common;

#[path = "../../server/tests/support/prometheus.rs"]
mod prometheus;

use common::browser::{chromium_or_skip, dump_dom, element_with};
use common::cluster::Cluster;
use common::{phase, u64_of, wait_for};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bound on the leader noticing a killed follower (its leader lease is 1 s).
const UNREACHABLE_TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn t131_live_page_panels_in_chromium() {
    let mut cluster = Cluster::start(3);
    let (leader, _term) = cluster.leader();
    let follower = cluster.ids().into_iter().find(|id| *id != leader).unwrap();

    phase("a lock whose owner exits at once, and a waiter queued behind it");
    let token = acquire_in_exiting_shell(&cluster, leader, "panels/held");
    let mut waiter = cluster
        .command_on(
            leader,
            &["acquire", "panels/held", "--ttl", "5m", "--wait", "2m"],
        )
        .args(["--owner", "panels-waiter"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the waiter");
    wait_for("the waiter to queue", UNREACHABLE_TIMEOUT, || {
        let locks = get_json(&cluster, leader, "/api/locks?prefix=panels%2F");
        (locks["locks"][0]["waiters"].as_array()?.len() == 1).then_some(())
    });

    phase("the JSON: health as diagnose judges it, and chart samples");
    let locks = get_json(&cluster, leader, "/api/locks?prefix=panels%2F");
    let health = &locks["locks"][0]["health"];
    assert_eq!(health["verdict"], "owner-gone", "{locks}");
    let diagnosed = cluster
        .cli_on(
            leader,
            &["diagnose", "panels/", "--interval", "1s", "--json"],
        )
        .json();
    let same_lock = diagnosed
        .as_array()
        .and_then(|all| all.iter().find(|d| d["lock"] == "panels/held"))
        .unwrap_or_else(|| panic!("diagnose does not list panels/held: {diagnosed}"));
    assert_eq!(
        same_lock["verdict"], health["verdict"],
        "the page and `leasehold diagnose` disagree: {same_lock} vs {health}"
    );
    let charts = get_json(&cluster, leader, "/api/charts");
    let grants: u64 = charts["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|sample| u64_of(sample, "grants"))
        .sum();
    assert!(grants >= 1, "no grant counted: {charts}");
    let (status, body) = get(&cluster, leader, "/api/charts?window=5m");
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("\"window\"") && body.contains("no parameters"),
        "{body}"
    );

    phase("kill a follower; the leader sees it unreachable");
    cluster.kill9(follower);
    wait_for(
        "the leader to see the follower unreachable",
        UNREACHABLE_TIMEOUT,
        || {
            let view = get_json(&cluster, leader, "/api/cluster");
            let members = view["members"].as_array()?.clone();
            members
                .iter()
                .any(|m| m["id"] == follower && m["reachable"] == false)
                .then_some(())
        },
    );

    let Some(chromium) = chromium_or_skip("t131_live_page_panels_in_chromium") else {
        let _ = waiter.kill();
        let _ = waiter.wait();
        return;
    };
    phase("render the leader's page in headless Chromium");
    let dom = dump_dom(&chromium, &format!("{}/", cluster.endpoint(leader)));
    let _ = waiter.kill();
    let _ = waiter.wait();

    lock_row_shows_health_ttl_and_queue(&dom, token);
    cluster_panel_shows_the_dead_follower(&dom, leader, follower);
    charts_and_events(&dom);
}

fn lock_row_shows_health_ttl_and_queue(dom: &str, token: u64) {
    phase("the lock's row: health, ttl beside the time left, the queue");
    let row = element_with(dom, "tr", r#"data-lock="panels/held""#);
    assert!(
        row.contains(&format!(r#"<td class="token">{token}</td>"#)),
        "{row}"
    );
    assert!(
        row.contains(r#"<td class="health" data-verdict="owner-gone""#)
            && row.contains("what to do: the holder's process is gone")
            && row.contains(">owner-gone</td>"),
        "the health column does not say owner-gone: {row}"
    );
    assert!(
        row.contains(r#"<td class="ttl">5 m 00 s</td>"#),
        "no ttl: {row}"
    );
    assert!(
        row.contains(r#"<td class="remaining fresh">"#),
        "a lease with most of its ttl left is not coloured fresh: {row}"
    );
    let queue = element_with(row, "ol", r#"class="queue""#);
    assert!(
        queue.contains("panels-waiter")
            && queue.contains(r#"<span class="waited">"#)
            && queue.contains(" of up to 2 m 00 s"),
        "the queue does not list the waiter and its wait: {queue}"
    );
    assert!(dom.contains(r#"id="lease-legend""#) && dom.contains("renewed on time"));
}

fn cluster_panel_shows_the_dead_follower(dom: &str, leader: u64, follower: u64) {
    phase("the cluster panel: the dead follower unreachable, the leader marked, lag, quorum");
    let dead = element_with(dom, "tr", &format!(r#"data-member="{follower}""#));
    assert!(
        dead.contains(r#"data-reachable="false""#)
            && dead.contains(r#"<td class="reachable">no</td>"#),
        "the killed follower is not shown unreachable: {dead}"
    );
    let lead = element_with(dom, "tr", &format!(r#"data-member="{leader}""#));
    assert!(
        lead.contains(&format!(r#"<td class="member">{leader} (leader)</td>"#))
            && lead.contains(r#"<td class="lag">0 (caught up)</td>"#),
        "the leader's row: {lead}"
    );
    let summary = element_with(dom, "p", r#"id="cluster-summary""#);
    assert!(
        summary.contains(&format!("leader: node {leader}")) && summary.contains("quorum: yes"),
        "{summary}"
    );
}

fn charts_and_events(dom: &str) {
    phase("the grants chart has points; the event filter and the zone");
    let grants = element_with(dom, "svg", r#"data-series="grants""#);
    let points: u64 = grants
        .split(r#"data-points=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no data-points on the grants chart: {grants}"));
    assert!(points >= 1, "{grants}");
    assert!(
        !grants.contains(r#"<polyline points="">"#),
        "an empty chart: {grants}"
    );
    let filter = element_with(dom, "select", r#"id="event-kind""#);
    assert!(
        filter.contains(r#"<option value="acquired">acquired</option>"#),
        "{filter}"
    );
    let head = element_with(dom, "th", r#"id="event-time-head""#);
    assert!(head.contains("UTC"), "the time column has no zone: {head}");
}

/// Acquires `name` (ttl 5 min) from a shell that exits right after: the
/// owner recorded, whether the CLI itself or its parent, is gone. Returns
/// the token.
fn acquire_in_exiting_shell(cluster: &Cluster, id: u64, name: &str) -> u64 {
    let cli = cluster.command_on(id, &["acquire", name, "--ttl", "5m", "--json"]);
    let mut shell = Command::new("sh");
    // Not `exec`: the shell stays the CLI's parent until the CLI is done.
    shell
        .arg("-c")
        .arg(r#""$0" "$@"; exit $?"#)
        .arg(cli.get_program())
        .args(cli.get_args())
        .env_remove("LEASEHOLD_ENDPOINTS");
    for (key, value) in cli.get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    let out = shell.stdin(Stdio::null()).output().expect("run sh");
    assert!(out.status.success(), "acquire failed: {out:?}");
    let acquired: Value = serde_json::from_slice(&out.stdout).expect("acquire --json");
    u64_of(&acquired, "token")
}

/// `GET path` on node `id`'s HTTP port: (status, body).
fn get(cluster: &Cluster, id: u64, path: &str) -> (u16, String) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(prometheus::http_get(&cluster.endpoint(id), path))
}

/// `GET path` answered 200 with JSON.
fn get_json(cluster: &Cluster, id: u64, path: &str) -> Value {
    let (status, body) = get(cluster, id, path);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {body}"))
}
