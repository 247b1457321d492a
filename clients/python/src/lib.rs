//! `leasehold._native`: the Rust half of the Python client.
//!
//! Everything that must keep time runs here, on the runtime's threads
//! (`runtime.rs`), which never take the GIL: the lease keeper, the
//! boot-clock deadline, failover, request ids — all `leasehold-client`'s.
//! Python calls in, gets a [`call::Call`] for anything that talks to the
//! server, and waits for it in its own way (`leasehold/_wait.py`: blocking
//! with Ctrl-C heard, or asyncio). Loss callbacks come from one notifier
//! thread. The Pythonic API (context managers, `threading.Lock` shape,
//! asyncio) is the pure-Python package around this module.
//!
//! Files: `call.rs` (an operation in flight), `client.rs`, `lease.rs`,
//! `guard.rs` (the three objects), `loss.rs` (watching for a loss),
//! `errors.rs` (Rust errors as `leasehold.errors` exceptions, one table),
//! `convert.rs` (seconds and outcomes across the boundary), `election.rs`
//! (who leads, observing it, proclaiming), `fence.rs`
//! (the fencing adapters' SQL, Lua and key layout, shared with Rust's).

mod call;
mod client;
mod convert;
mod election;
mod errors;
mod fence;
mod guard;
mod lease;
mod loss;
mod runtime;

use pyo3::prelude::*;

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The server's longest wait, in seconds: a wait without bound queues
    // in turns of this.
    let wait_max_s = leasehold_core::limits::WAIT_MS_MAX as f64 / 1000.0;
    module.add("WAIT_MAX_S", wait_max_s)?;
    module.add_class::<call::Call>()?;
    module.add_class::<client::Client>()?;
    module.add_class::<lease::Lease>()?;
    module.add_class::<guard::Guard>()?;
    module.add_class::<loss::Loss>()?;
    module.add_class::<election::Observer>()?;
    fence::register(module)?;
    Ok(())
}
