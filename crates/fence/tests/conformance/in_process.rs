//! The in-process adapters under the suite: [`MemoryFence`] and
//! [`FileFence`] guard a map of values in this process; every handle of a
//! store shares the one fence, as the writers of one process would.

use crate::suite::{Handle, Store, Write};
use leasehold_fence::file::{FileFence, FileFenceError};
use leasehold_fence::memory::MemoryFence;
use leasehold_fence::{Rejection, StaleToken};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tempfile::TempDir;

/// What the suite needs of an in-process fence (both have this shape).
trait InProcess: Send + Sync + 'static {
    /// Runs `run` if `w`'s token passes; a refusal is the only error.
    fn fenced(&self, w: &Write<'_>, run: impl FnOnce()) -> Result<(), StaleToken>;
    fn highest(&self, resource: &str, lock: &str) -> Option<u64>;
    fn rejections(&self) -> Vec<Rejection>;
}

impl InProcess for MemoryFence {
    fn fenced(&self, w: &Write<'_>, run: impl FnOnce()) -> Result<(), StaleToken> {
        self.write(w.resource, w.lock, w.token, run)
    }

    fn highest(&self, resource: &str, lock: &str) -> Option<u64> {
        MemoryFence::highest(self, resource, lock)
    }

    fn rejections(&self) -> Vec<Rejection> {
        MemoryFence::rejections(self)
    }
}

impl InProcess for FileFence {
    fn fenced(&self, w: &Write<'_>, run: impl FnOnce()) -> Result<(), StaleToken> {
        match self.write(w.resource, w.lock, w.token, run) {
            Ok(()) => Ok(()),
            Err(FileFenceError::Stale(stale)) => Err(stale),
            Err(other) => panic!("file fence: {other}"),
        }
    }

    fn highest(&self, resource: &str, lock: &str) -> Option<u64> {
        FileFence::highest(self, resource, lock)
    }

    fn rejections(&self) -> Vec<Rejection> {
        FileFence::rejections(self)
    }
}

/// A fence and the values it guards; cloning it is opening a handle.
struct Local<F> {
    fence: Arc<F>,
    values: Arc<Mutex<HashMap<String, String>>>,
    /// The file fence's directory, removed with the last handle.
    _dir: Option<Arc<TempDir>>,
}

impl<F> Clone for Local<F> {
    fn clone(&self) -> Self {
        Local {
            fence: self.fence.clone(),
            values: self.values.clone(),
            _dir: self._dir.clone(),
        }
    }
}

impl<F: InProcess> Local<F> {
    fn new(fence: F, dir: Option<TempDir>) -> Option<Local<F>> {
        Some(Local {
            fence: Arc::new(fence),
            values: Arc::default(),
            _dir: dir.map(Arc::new),
        })
    }
}

impl<F: InProcess> Store for Local<F> {
    type Handle = Local<F>;

    async fn handle(&self) -> Local<F> {
        self.clone()
    }
}

impl<F: InProcess> Handle for Local<F> {
    async fn put(&mut self, w: Write<'_>) -> Result<(), StaleToken> {
        let values = &self.values;
        self.fence.fenced(&w, || {
            let mut values = values.lock().expect("values");
            values.insert(w.resource.to_owned(), w.value.to_owned());
        })
    }

    async fn value(&mut self, resource: &str) -> Option<String> {
        self.values.lock().expect("values").get(resource).cloned()
    }

    async fn highest(&mut self, resource: &str, lock: &str) -> Option<u64> {
        self.fence.highest(resource, lock)
    }

    async fn rejections(&mut self, _resource: &str) -> Vec<Rejection> {
        self.fence.rejections()
    }
}

mod memory {
    use super::*;

    conformance!(async { Local::new(MemoryFence::new(), None) });
}

mod file {
    use super::*;

    async fn store() -> Option<Local<FileFence>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let fence = FileFence::open(dir.path().join("fence")).expect("open the fence file");
        Local::new(fence, Some(dir))
    }

    conformance!(store());
}
