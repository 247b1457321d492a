//! The fencing adapters' shared parts, for `leasehold.fence`: the
//! PostgreSQL schema and statements and the Redis script, straight from
//! `leasehold-fence` (one copy, used by Rust and Python alike).

use pyo3::prelude::*;

/// Adds the fence constants and functions to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add(
        "POSTGRES_MIGRATION",
        leasehold_fence::postgres::MIGRATION_0001,
    )?;
    module.add("REDIS_SCRIPT", leasehold_fence::redis::SCRIPT)?;
    Ok(())
}
