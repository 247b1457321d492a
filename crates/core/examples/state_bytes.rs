//! Where the replicated state's bytes go: builds `M` leases holding `N`
//! locks each through `State::apply`, as the server does, and counts the
//! heap the state keeps, per lease and per held lock. The server's RSS
//! (`leasehold bench --workload hold --server-pid`) is this plus what the
//! server keeps beside the state and the allocator's slack; comparing the
//! two says which side to shrink.
//!
//! `cargo run --release -p leasehold-core --example state_bytes -- 1000 1000`
//!
//! Every command carries a request id, as the client library's do, so the
//! per-lease memory of retried requests is counted too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use leasehold_core::{Acquire, Command, LeaseId, LockName, OwnerInfo, Reply, RequestId, State};

/// The system allocator, counting the bytes and blocks live on the heap.
struct Counting;

static BYTES: AtomicI64 = AtomicI64::new(0);
static BLOCKS: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Live heap now: (bytes, blocks).
fn live() -> (i64, i64) {
    (
        BYTES.load(Ordering::Relaxed),
        BLOCKS.load(Ordering::Relaxed),
    )
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u32>());
    let (Some(Ok(leases)), Some(Ok(locks))) = (args.next(), args.next()) else {
        eprintln!("usage: state_bytes LEASES LOCKS_PER_LEASE (e.g. 1000 1000)");
        std::process::exit(2);
    };
    let mut state = State::default();
    let empty = live();
    let ids: Vec<LeaseId> = (0..leases).map(|l| grant(&mut state, l)).collect();
    let granted = live();
    for (l, &lease) in ids.iter().enumerate() {
        for k in 0..locks {
            acquire(&mut state, lease, l, k);
        }
    }
    let held = live();
    let total_locks = f64::from(leases) * f64::from(locks);
    let per =
        |a: (i64, i64), b: (i64, i64), n: f64| ((b.0 - a.0) as f64 / n, (b.1 - a.1) as f64 / n);
    let (lease_bytes, lease_blocks) = per(empty, granted, f64::from(leases));
    let (lock_bytes, lock_blocks) = per(granted, held, total_locks);
    println!("state of {leases} leases × {locks} locks ({total_locks} held)");
    println!("  per lease      {lease_bytes:.0} bytes in {lease_blocks:.1} blocks (grant, owner, request-id memory)");
    println!("  per held lock  {lock_bytes:.0} bytes in {lock_blocks:.1} blocks (lock table, lease's holds, request-id memory)");
    println!(
        "  whole state    {:.1} MiB live heap, in {} blocks",
        (held.0 - empty.0) as f64 / (1024.0 * 1024.0),
        held.1 - empty.1
    );
    println!(
        "  inline sizes   Lock {} B, Lease {} B, LockName {} B, Outcome {} B (a request-id memory entry holds one)",
        std::mem::size_of::<leasehold_core::Lock>(),
        std::mem::size_of::<leasehold_core::Lease>(),
        std::mem::size_of::<LockName>(),
        std::mem::size_of::<leasehold_core::Outcome>(),
    );
    let bytes = postcard::to_allocvec(&state).expect("the state encodes");
    drop(state);
    let before = live();
    let mut restarted: State = postcard::from_bytes(&bytes).expect("the state decodes");
    restarted.settle_decoded();
    let read_back = live();
    println!(
        "  read back      {:.1} MiB live heap, in {} blocks (decoded from its {:.1} MB snapshot encoding, as at a restart)",
        (read_back.0 - before.0) as f64 / (1024.0 * 1024.0),
        read_back.1 - before.1,
        bytes.len() as f64 / 1e6,
    );
}

/// Lease `l`'s grant, with a request id as the client library sends.
fn grant(state: &mut State, l: u32) -> LeaseId {
    let owner = OwnerInfo {
        owner: format!("leasehold-bench/{l}"),
        ..OwnerInfo::default()
    };
    let command = Command::GrantLease {
        ttl_ms: 60_000,
        owner,
        request_id: request_id(),
    };
    match state.apply(command, 1).outcome {
        Ok(Reply::LeaseGranted { lease, .. }) => lease,
        other => panic!("grant {l} failed: {other:?}"),
    }
}

/// Lease `l` acquires its `k`th lock, named as `leasehold bench --workload
/// hold` names it.
fn acquire(state: &mut State, lease: LeaseId, l: usize, k: u32) {
    let raw = format!("leasehold-bench/12345-1764700000000/h/{l}/{k}");
    let command = Command::Acquire(Acquire {
        lease,
        name: LockName::parse(&raw).expect("a valid name"),
        wait_ms: 0,
        request_id: request_id(),
        fenced: true,
        lock_delay_ms: 0,
        max_hold_ms: 0,
        metadata: Default::default(),
    });
    if let Err(e) = state.apply(command, 2).outcome {
        panic!("acquire {raw} failed: {e:?}");
    }
}

/// The next request id, shaped like the library's (`<random prefix>.<count>`,
/// one count per request; the count here in hex, no longer than the
/// library's base 36 below 36^6 requests, so kept inline as the server's are).
fn request_id() -> Option<RequestId> {
    static SENT: AtomicU64 = AtomicU64::new(0);
    let n = SENT.fetch_add(1, Ordering::Relaxed);
    RequestId::parse(&format!("3w5e11264sgsf.{n:x}")).expect("a valid request id")
}
