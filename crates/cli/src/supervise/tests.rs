//! Supervision against real processes (`/bin/sh` scripts). Scripts announce
//! readiness through files and tests await conditions with a timeout, never
//! a "long enough" sleep.

use super::error::SpawnError;
use super::group::process_alive;
use super::{exit_code, Forwarder, Supervised};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// How long any awaited condition may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// A scratch directory plus helpers to run scripts that report through it.
struct Scratch {
    dir: TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `script` under `/bin/sh` with `$DIR` set to the scratch directory.
    fn sh(&self, script: &str, env: &[(&str, &str)]) -> Supervised {
        let mut vars = vec![("DIR".to_owned(), self.dir.path().display().to_string())];
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let args = [OsString::from("-c"), OsString::from(script)];
        Supervised::spawn(OsStr::new("/bin/sh"), &args, &vars).unwrap()
    }

    /// Waits until the script has written a whole line to `name`.
    async fn line(&self, name: &str) -> String {
        let path = self.path(name);
        let mut text = String::new();
        until(&format!("a line in {name}"), || {
            text = std::fs::read_to_string(&path).unwrap_or_default();
            text.ends_with('\n')
        })
        .await;
        text.trim_end().to_owned()
    }

    /// Waits for a pid the script wrote to `name`.
    async fn pid(&self, name: &str) -> i32 {
        self.line(name).await.parse().unwrap()
    }
}

/// Polls `condition` every 10 ms; fails the test after [`PATIENCE`].
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `child.wait()`, failing the test after [`PATIENCE`].
async fn wait(child: &mut Supervised) -> std::process::ExitStatus {
    let status = tokio::time::timeout(PATIENCE, child.wait()).await;
    status.expect("the command did not exit").unwrap()
}

fn pgid_of(pid: i32) -> i32 {
    // SAFETY: getpgid only reads the process table.
    unsafe { libc::getpgid(pid) }
}

#[tokio::test]
async fn command_sees_the_lock_variables() {
    let scratch = Scratch::new();
    let env = [
        ("LEASEHOLD_LOCK", "jobs/nightly"),
        ("LEASEHOLD_TOKEN", "42"),
        ("LEASEHOLD_LEASE", "7f3a"),
    ];
    let script = r#"echo "$LEASEHOLD_LOCK|$LEASEHOLD_TOKEN|$LEASEHOLD_LEASE" > "$DIR/env""#;
    let mut child = scratch.sh(script, &env);
    assert!(wait(&mut child).await.success());
    assert_eq!(scratch.line("env").await, "jobs/nightly|42|7f3a");
}

#[tokio::test]
async fn command_leads_its_own_process_group() {
    // Found on PATH, which also checks that our environment is passed on.
    let args = [OsString::from("1000")];
    let child = Supervised::spawn(OsStr::new("sleep"), &args, &[]).unwrap();
    // SAFETY: getpgrp cannot fail.
    let ours = unsafe { libc::getpgrp() };
    assert_eq!(pgid_of(child.group().id()), child.group().id());
    assert_eq!(child.group().id(), child.group().id());
    assert_ne!(child.group().id(), ours);
}

#[tokio::test]
async fn command_ignoring_sigterm_is_killed_after_the_grace() {
    let scratch = Scratch::new();
    let script = r#"trap '' TERM; echo > "$DIR/ready"; while :; do sleep 0.05; done"#;
    let mut child = scratch.sh(script, &[]);
    scratch.line("ready").await;
    let grace = Duration::from_millis(300);
    let started = Instant::now();
    let ended = child.terminate_group(grace).await.unwrap();
    assert!(
        started.elapsed() >= grace,
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(ended.killed && ended.group_gone, "{ended:?}");
    assert_eq!(exit_code(ended.status.unwrap()), 137);
    assert!(!process_alive(child.group().id()) && !child.group_alive());
}

#[tokio::test]
async fn command_that_exits_on_sigterm_is_not_killed() {
    let scratch = Scratch::new();
    let mut child = scratch.sh("while :; do sleep 0.05; done", &[]);
    let grace = PATIENCE;
    let started = Instant::now();
    let ended = child.terminate_group(grace).await.unwrap();
    assert!(
        started.elapsed() < grace / 2,
        "took {:?}",
        started.elapsed()
    );
    assert!(!ended.killed && ended.group_gone, "{ended:?}");
    assert_eq!(exit_code(ended.status.unwrap()), 143);
}

#[tokio::test]
async fn grandchildren_in_the_group_are_terminated_too() {
    let scratch = Scratch::new();
    let mut child = scratch.sh(r#"sleep 1000 & echo $! > "$DIR/pid"; wait"#, &[]);
    let grandchild = scratch.pid("pid").await;
    assert!(process_alive(grandchild));
    assert_eq!(pgid_of(grandchild), child.group().id());
    let ended = child.terminate_group(PATIENCE).await.unwrap();
    assert!(!ended.killed && ended.group_gone, "{ended:?}");
    // Gone, or a zombie its new parent has not reaped yet: either way dead.
    assert!(!process_alive(grandchild));
}

#[tokio::test]
async fn a_grandchild_ignoring_sigterm_is_waited_for_then_killed() {
    let scratch = Scratch::new();
    // The grandchild writes its pid only once it ignores SIGTERM.
    let grandchild = r#"trap '' TERM; echo $$ > "$DIR/pid"; exec sleep 1000"#;
    let script = r#"sh -c "$GRANDCHILD" & wait"#;
    let mut child = scratch.sh(script, &[("GRANDCHILD", grandchild)]);
    let grandchild = scratch.pid("pid").await;
    let grace = Duration::from_millis(300);
    let started = Instant::now();
    let ended = child.terminate_group(grace).await.unwrap();
    // The leader died of SIGTERM at once; the group lived on until SIGKILL.
    assert!(
        started.elapsed() >= grace,
        "gave up after {:?}",
        started.elapsed()
    );
    assert!(ended.killed && ended.group_gone, "{ended:?}");
    assert_eq!(exit_code(ended.status.unwrap()), 143);
    assert!(!process_alive(grandchild));
}

#[tokio::test]
async fn group_outlives_its_leader_while_members_remain() {
    let scratch = Scratch::new();
    let mut child = scratch.sh(r#"sleep 1000 & echo $! > "$DIR/pid""#, &[]);
    let grandchild = scratch.pid("pid").await;
    assert!(wait(&mut child).await.success());
    assert!(child.group_alive(), "the grandchild still runs");
    child.group().signal(libc::SIGKILL).unwrap();
    until("the group to vanish", || !child.group_alive()).await;
    assert!(!process_alive(grandchild));
}

#[tokio::test]
async fn an_unreaped_leader_does_not_keep_the_group_alive() {
    let scratch = Scratch::new();
    let mut child = scratch.sh("exit 0", &[]);
    let pid = child.group().id();
    until("the command to become a zombie", || !process_alive(pid)).await;
    // SAFETY: signal 0 only probes. The zombie leader is still a member...
    assert_eq!(unsafe { libc::kill(-pid, 0) }, 0);
    // ...but no live one remains.
    assert!(!child.group_alive());
    assert!(wait(&mut child).await.success());
}

#[tokio::test]
async fn exit_codes_are_reported_the_shell_way() {
    let scratch = Scratch::new();
    let mut child = scratch.sh("exit 7", &[]);
    assert_eq!(exit_code(wait(&mut child).await), 7);

    let args = [OsString::from("1000")];
    let mut child = Supervised::spawn(OsStr::new("sleep"), &args, &[]).unwrap();
    child.group().signal(libc::SIGKILL).unwrap();
    assert_eq!(exit_code(wait(&mut child).await), 137);
}

#[tokio::test]
async fn a_signal_sent_to_the_group_reaches_the_command() {
    let scratch = Scratch::new();
    let script = r#"trap 'echo got > "$DIR/mark"; exit 0' USR1
        echo > "$DIR/ready"; while :; do sleep 0.05; done"#;
    let mut child = scratch.sh(script, &[]);
    scratch.line("ready").await;
    child.group().signal(libc::SIGUSR1).unwrap();
    assert!(wait(&mut child).await.success());
    assert_eq!(scratch.line("mark").await, "got");
}

#[tokio::test]
async fn forwarder_passes_a_signal_we_receive_to_the_group() {
    // SIGWINCH is ignored by default, so raising it at the test process is
    // harmless even to tests that do not listen for it.
    let mut forwarder = Forwarder::install_for(&[libc::SIGWINCH]).unwrap();
    let scratch = Scratch::new();
    let script = r#"trap 'echo got > "$DIR/mark"; exit 0' WINCH
        echo > "$DIR/ready"; while :; do sleep 0.05; done"#;
    let mut child = scratch.sh(script, &[]);
    scratch.line("ready").await;
    // SAFETY: sends a signal our runtime now handles to our own process.
    assert_eq!(unsafe { libc::kill(libc::getpid(), libc::SIGWINCH) }, 0);
    // The same loop `leasehold lock` runs: forward until the command exits.
    let group = child.group();
    let mut forwarded = Vec::new();
    let status = loop {
        tokio::select! {
            status = wait(&mut child) => break status,
            Some(signal) = forwarder.recv() => {
                group.signal(signal).unwrap();
                forwarded.push(signal);
            }
        }
    };
    assert!(status.success());
    assert_eq!(scratch.line("mark").await, "got");
    assert_eq!(forwarded, [libc::SIGWINCH]);
}

#[tokio::test]
async fn the_command_dies_with_the_thread_that_spawned_it() {
    // PR_SET_PDEATHSIG fires when the spawning *thread* ends, which lets us
    // observe it without killing the test process.
    let pid = std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let args = [OsString::from("1000")];
        let child = runtime.block_on(async { Supervised::spawn(OsStr::new("sleep"), &args, &[]) });
        let mut child = child.unwrap();
        let pid = child.group().id();
        // Not dropped: Drop would kill it and prove nothing. Forgetting it
        // must not leak the terminal when the tests run in one.
        child.give_back_terminal();
        std::mem::forget(child);
        pid
    })
    .join()
    .unwrap();
    until("the orphaned command to die", || !process_alive(pid)).await;
}

#[tokio::test]
async fn dropping_the_handle_kills_the_group() {
    let scratch = Scratch::new();
    let child = scratch.sh(r#"sleep 1000 & echo $! > "$DIR/pid"; wait"#, &[]);
    let grandchild = scratch.pid("pid").await;
    let leader = child.group().id();
    drop(child);
    until("the group to die", || {
        !process_alive(leader) && !process_alive(grandchild)
    })
    .await;
}

#[tokio::test]
async fn a_missing_command_is_not_found_127() {
    let err = Supervised::spawn(OsStr::new("leasehold-no-such-command"), &[], &[]).unwrap_err();
    assert!(matches!(err, SpawnError::NotFound { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 127);
    let message = err.to_string();
    assert!(
        message.starts_with("cannot run `leasehold-no-such-command`: "),
        "{message}"
    );
    assert!(message.contains("check the command and PATH"), "{message}");
}

#[tokio::test]
async fn a_file_without_execute_permission_is_not_executable_126() {
    let scratch = Scratch::new();
    let script = scratch.path("script.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    let err = Supervised::spawn(script.as_os_str(), &[], &[]).unwrap_err();
    assert!(matches!(err, SpawnError::NotExecutable { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 126);
    assert!(err.to_string().contains("chmod +x"), "{err}");
}
