//! # leasehold-testkit
//!
//! What Leasehold's tests share, in one place so each idea has one
//! implementation. A dev-dependency only (`publish = false`): nothing here
//! ships in a Leasehold crate.
//!
//! - [`TestServer`] (`server.rs`): a real single-node server in this
//!   process, on a free loopback port with a temporary data dir, plus raw
//!   gRPC clients to look at and poke it from outside the client library;
//!   [`grpc`] builds the raw requests.
//! - [`eventually`] and its variants (`wait.rs`): bounded polling, so no
//!   test sleeps "long enough"; [`wait_for`] is the blocking flavour for
//!   the process-based CLI tests.
//! - [`Proxy`] (`proxy.rs`): a TCP proxy that can cut its connections (all,
//!   or those from one source IP), to stage a server going away or a
//!   network partition while the server runs on.
//! - [`postgres`] and [`redis`]: where the tests find the real databases
//!   the fencing adapters talk to, and what happens when they are missing
//!   (under `CI=true`: fail; elsewhere: the rules each module states).
//! - [`env`]: CI or not, free ports, names unique to a run.
//! - [`python`]: where the tests find a Python interpreter with the
//!   packages they import (the virtualenvs `.ci/run` makes).
//! - [`raw_grpc`]: any method of the API called with bytes as they are,
//!   for the tests and fuzz targets that play a broken client.
//! - [`tls`]: the certificate factory of the TLS tests (a CA, server, node,
//!   client and expired certificates, as PEM).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use leasehold_testkit::{eventually, TestServer};
//! use std::time::Duration;
//!
//! let server = TestServer::start().await;
//! let lease = leasehold_testkit::grpc::grant(&mut server.leases().await, 10_000).await;
//! let token = server.acquire_raw(lease, "docs/lock").await;
//! eventually("the lock is held", Duration::from_secs(5), async || {
//!     server.holder("docs/lock").await == Some((lease, token))
//! })
//! .await;
//! server.stop().await;
//! # }
//! ```

pub mod env;
pub mod grpc;
pub mod postgres;
mod proxy;
pub mod python;
pub mod raw_grpc;
pub mod redis;
mod server;
pub mod tls;
mod wait;

pub use env::{dead_addr, free_port, in_ci, unique};
pub use proxy::Proxy;
pub use server::{client, TestServer};
pub use wait::{eventually, eventually_by, eventually_some, wait_for, within};
