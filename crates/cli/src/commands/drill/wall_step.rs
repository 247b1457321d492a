//! Seed 001, drill 4: the holder's wall clock steps forward (as an NTP
//! step would), by an hour, far past the lease. Lease timing runs on the
//! boot clock, so nothing may change: the holder keeps the lock, keeps
//! writing (every write accepted) for two ttls after the step, and the
//! server still lists it with the same token.
//!
//! The step is made with libfaketime (Debian package `faketime`): the
//! worker starts with it preloaded, reading its offset from a file
//! (`FAKETIME_TIMESTAMP_FILE`, re-read on every call) that the drill
//! rewrites from `+0` to `+1h`; `DONT_FAKE_MONOTONIC=1` leaves the
//! monotonic and boot clocks alone, as an NTP step does. Without
//! libfaketime the drill is skipped and says why.

use super::ctx::{Ctx, STEP};
use super::process::Worker;
use super::report::Outcome;
use super::{check, ms};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// The drill's name.
pub const NAME: &str = "wall-step";
/// What it proves.
pub const CLAIM: &str =
    "a +1h wall-clock step on the holder changes nothing: it keeps the lock and its writes are accepted";

/// The step.
const STEP_MS: u64 = 3_600_000;
/// How far short of the step a worker's wall clock may read and still
/// count as stepped (the step is seen late by at most a write interval).
const STEP_SEEN_MARGIN_MS: u64 = 60_000;

/// The offset file, removed when dropped.
struct OffsetFile(PathBuf);

impl OffsetFile {
    fn create() -> Result<OffsetFile, String> {
        let name = format!("leasehold-drill-{}-faketime", std::process::id());
        let file = OffsetFile(std::env::temp_dir().join(name));
        file.set("+0")?;
        Ok(file)
    }

    /// Replaces the offset at once (written aside, then renamed).
    fn set(&self, offset: &str) -> Result<(), String> {
        let aside = self.0.with_extension("next");
        std::fs::write(&aside, format!("{offset}\n"))
            .and_then(|()| std::fs::rename(&aside, &self.0))
            .map_err(|e| format!("cannot write {}: {e}", self.0.display()))
    }
}

impl Drop for OffsetFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let Some(library) = libfaketime() else {
        out.skip("libfaketime is not installed (Debian: apt install faketime); the wall-clock step needs it");
        return Ok(());
    };
    let offset = OffsetFile::create()?;
    let mut spec = ctx.spec(NAME, "w1");
    spec.env.extend([
        ("LD_PRELOAD".to_owned(), library.display().to_string()),
        (
            "FAKETIME_TIMESTAMP_FILE".to_owned(),
            offset.0.display().to_string(),
        ),
        ("FAKETIME_NO_CACHE".to_owned(), "1".to_owned()),
        ("DONT_FAKE_MONOTONIC".to_owned(), "1".to_owned()),
    ]);
    let (mut worker, held) = ctx.holder("holder", &spec).await?;
    let watch = held.ttl * 2;
    out.bound = format!(
        "for 2 ttls ({} ms) after a +{} s wall step: no loss, every write accepted, same token",
        ms(watch),
        STEP_MS / 1_000
    );
    let stepped_at = Instant::now();
    offset.set(&format!("+{}", STEP_MS / 1_000))?;
    let writes = writes_until(&mut worker, stepped_at + watch).await?;
    let wall_now_ms = unix_ms();
    let stepped = writes
        .iter()
        .filter(|w| w.wall_ms + STEP_SEEN_MARGIN_MS >= wall_now_ms + STEP_MS)
        .count();
    let refused = writes.iter().filter(|w| !w.accepted).count();
    let token_now = ctx.holder_token(NAME).await?;
    worker.send("stop").await?;
    worker.expect("RELEASED", STEP).await?;
    out.set("writes_after_step", writes.len());
    out.set("writes_seeing_the_step", stepped);
    out.set("writes_refused", refused);
    out.set("token_before", held.token);
    out.set("token_after", token_now);
    check(stepped > 0, || {
        "the holder's wall clock never showed the step: libfaketime was not in effect".to_owned()
    })?;
    check(refused == 0, || {
        format!("{refused} write(s) refused after the step")
    })?;
    check(token_now == Some(held.token), || {
        format!(
            "the server's holder token is {token_now:?}, not {}",
            held.token
        )
    })
}

/// One write the worker reported.
struct Write {
    wall_ms: u64,
    accepted: bool,
}

/// The worker's writes until `until`; a loss is an error.
async fn writes_until(worker: &mut Worker, until: Instant) -> Result<Vec<Write>, String> {
    let mut writes = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(writes);
        }
        let Ok(line) = tokio::time::timeout(left, worker.next(STEP)).await else {
            return Ok(writes);
        };
        let line = line?;
        if line.kind != "WROTE" {
            return Err(format!(
                "after the wall step the holder said {:?}",
                line.text
            ));
        }
        writes.push(Write {
            wall_ms: line.u64("wall_ms")?,
            accepted: line.accepted(),
        });
    }
}

/// This host's wall clock, Unix ms.
fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Where libfaketime's multi-threaded library is installed, if it is.
fn libfaketime() -> Option<PathBuf> {
    let arch = std::env::consts::ARCH;
    [
        format!("/usr/lib/{arch}-linux-gnu/faketime/libfaketimeMT.so.1"),
        "/usr/lib/faketime/libfaketimeMT.so.1".to_owned(),
        "/usr/local/lib/faketime/libfaketimeMT.so.1".to_owned(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|path| path.exists())
}
