//! [`Call`]: one client operation running on the runtime, which Python
//! waits for in whichever way suits it. The synchronous API waits in short
//! slices with the GIL released (so Ctrl-C is heard between them); asyncio
//! adds a done callback that wakes its loop. Either way the operation
//! itself runs on the runtime and never needs the GIL until its result is
//! turned into Python objects, by the thread that takes it.

use crate::runtime::{call_reporting, notify, runtime};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tokio::task::AbortHandle;

/// Turns an outcome into Python objects (or the exception), with the GIL.
pub type Deliver = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// An operation in flight: `wait()`, `done()`, `result()`, `cancel()`,
/// `add_done_callback()`.
#[pyclass(frozen, module = "leasehold._native")]
pub struct Call {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    finished: Condvar,
}

enum State {
    Running {
        abort: Option<AbortHandle>,
        callbacks: Vec<Py<PyAny>>,
    },
    /// `None` once `result()` has taken it.
    Done(Option<Deliver>),
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Settles the call with `deliver` unless it is settled already, and
    /// hands its callbacks to the notifier.
    fn settle(&self, deliver: Deliver) {
        let callbacks = {
            let mut state = self.state();
            let State::Running { callbacks, .. } = &mut *state else {
                return;
            };
            let callbacks = std::mem::take(callbacks);
            *state = State::Done(Some(deliver));
            callbacks
        };
        self.finished.notify_all();
        for callback in callbacks {
            notify(move |py| call_reporting(py, &callback, None));
        }
    }
}

/// Runs `operation` on the runtime; its output is delivered to Python
/// when the result is taken.
pub fn spawn<F>(operation: F) -> Call
where
    F: Future<Output = Deliver> + Send + 'static,
{
    let shared = Arc::new(Shared {
        state: Mutex::new(State::Running {
            abort: None,
            callbacks: Vec::new(),
        }),
        finished: Condvar::new(),
    });
    let settles = shared.clone();
    let task = runtime().spawn(async move {
        let deliver = operation.await;
        settles.settle(deliver);
    });
    if let State::Running { abort, .. } = &mut *shared.state() {
        *abort = Some(task.abort_handle());
    }
    Call { shared }
}

#[pymethods]
impl Call {
    /// Whether the operation has finished (or was cancelled).
    fn done(&self) -> bool {
        matches!(*self.shared.state(), State::Done(_))
    }

    /// Waits up to `timeout` seconds (`None`: until done) with the GIL
    /// released; returns whether the operation is done.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = timeout
            .map(crate::convert::seconds("timeout"))
            .transpose()?;
        Ok(py.detach(|| {
            let state = self.shared.state();
            let running = |state: &mut State| matches!(state, State::Running { .. });
            let state = match timeout {
                Some(timeout) => {
                    self.shared
                        .finished
                        .wait_timeout_while(state, timeout, running)
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .0
                }
                None => self
                    .shared
                    .finished
                    .wait_while(state, running)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            };
            matches!(*state, State::Done(_))
        }))
    }

    /// The operation's value, or raises its error. Once only.
    fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let deliver = match &mut *self.shared.state() {
            State::Running { .. } => {
                return Err(PyRuntimeError::new_err(
                    "the call has not finished; wait() for it first",
                ))
            }
            State::Done(deliver) => deliver.take(),
        };
        match deliver {
            Some(deliver) => deliver(py),
            None => Err(PyRuntimeError::new_err(
                "the call's result was already taken",
            )),
        }
    }

    /// Stops the operation if it is still running (an acquire that was
    /// granted meanwhile is released by its lease). Returns whether it
    /// was still running.
    fn cancel(&self) -> bool {
        let abort = match &*self.shared.state() {
            State::Running { abort, .. } => abort.clone(),
            State::Done(_) => return false,
        };
        if let Some(abort) = abort {
            abort.abort();
        }
        self.shared.settle(Box::new(|_| {
            Err(PyRuntimeError::new_err("the call was cancelled"))
        }));
        true
    }

    /// Calls `callback()` once the operation is done, from the notifier
    /// thread (at once if it is done already).
    fn add_done_callback(&self, callback: Py<PyAny>) {
        let mut state = self.shared.state();
        match &mut *state {
            State::Running { callbacks, .. } => callbacks.push(callback),
            State::Done(_) => {
                drop(state);
                notify(move |py| call_reporting(py, &callback, None));
            }
        }
    }
}

/// Waits for `operation` on the runtime from a Python thread, with the GIL
/// released, for calls too short to need cancelling.
pub fn block_on<T: Send>(py: Python<'_>, operation: impl Future<Output = T> + Send) -> T {
    py.detach(|| runtime().block_on(operation))
}

/// Delivers `result`: the value through `convert`, an error as its
/// `leasehold.errors` exception.
pub fn deliver<T, C>(result: Result<T, leasehold_client::Error>, convert: C) -> Deliver
where
    T: Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    Box::new(move |py| match result {
        Ok(value) => convert(py, value),
        Err(error) => Err(crate::errors::to_py(py, &error)),
    })
}

/// A value with a plain Python form (numbers, strings, lists, tuples,
/// `#[pyclass]` instances) as a Python object.
pub fn plain<T>(py: Python<'_>, value: T) -> PyResult<Py<PyAny>>
where
    T: for<'py> IntoPyObject<'py>,
{
    use pyo3::IntoPyObjectExt;
    value.into_py_any(py)
}
