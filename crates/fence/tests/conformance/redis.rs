//! The Redis adapter under the suite: each resource is a string key
//! written by the fenced `SET`. Every handle is a connection of its own.

use crate::suite::{Handle, Store, Write};
use leasehold_fence::redis::resp::{Connection, Reply};
use leasehold_fence::redis::{FenceError, RedisFence, REJECTIONS_KEPT};
use leasehold_fence::{Rejection, StaleToken};

/// The test server.
struct Redis {
    addr: String,
}

/// One fenced connection, and a plain one to read values back.
struct Handles {
    fence: RedisFence,
    reader: Connection,
}

impl Store for Redis {
    type Handle = Handles;

    async fn handle(&self) -> Handles {
        Handles {
            fence: RedisFence::connect(&self.addr).await.expect("connect"),
            reader: Connection::connect(&self.addr).await.expect("connect"),
        }
    }
}

impl Handle for Handles {
    async fn put(&mut self, w: Write<'_>) -> Result<(), StaleToken> {
        match self.fence.set(w.resource, w.lock, w.token, w.value).await {
            Ok(()) => Ok(()),
            Err(FenceError::Stale(stale)) => Err(stale),
            Err(other) => panic!("fenced SET {}: {other}", w.resource),
        }
    }

    async fn value(&mut self, resource: &str) -> Option<String> {
        match self.reader.command(&[b"GET", resource.as_bytes()]).await {
            Ok(Reply::Bulk(None)) => None,
            Ok(reply) => Some(reply.as_text().expect("a text value").to_owned()),
            Err(error) => panic!("GET {resource}: {error}"),
        }
    }

    async fn highest(&mut self, resource: &str, lock: &str) -> Option<u64> {
        let highest = self.fence.highest(resource, lock).await;
        highest.expect("read the fence")
    }

    async fn rejections(&mut self, resource: &str) -> Vec<Rejection> {
        let logged = self.fence.rejections(resource, REJECTIONS_KEPT).await;
        logged.expect("read the rejection log")
    }
}

async fn store() -> Option<Redis> {
    let addr = leasehold_testkit::redis::addr().await?;
    Some(Redis { addr })
}

conformance!(store());
