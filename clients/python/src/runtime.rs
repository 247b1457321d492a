//! The two kinds of threads the native module runs on, and why they are
//! apart from Python's.
//!
//! - **The runtime** (`leasehold-rt` threads): a tokio runtime that runs
//!   every call, every lease keeper and every loss watcher. Its threads
//!   never take the GIL, so a Python thread spinning with the GIL, an
//!   event loop blocked in `time.sleep`, or a long C call cannot delay a
//!   keep-alive or the moment a loss is noticed.
//! - **The notifier** (`leasehold-notify`): the one thread that calls back
//!   into Python (done callbacks of calls, `on_lost` callbacks). Waiting
//!   for the GIL happens there, never on the runtime.

use pyo3::prelude::*;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use tokio::runtime::Runtime;

/// Worker threads of the runtime: keepers and calls are I/O-bound; two let
/// one slow callback-free task not hold up the others.
const RUNTIME_WORKERS: usize = 2;

/// Work for the notifier: a call into Python.
type Notice = Box<dyn FnOnce(Python<'_>) + Send>;

/// The runtime, started on first use.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_WORKERS)
            .thread_name("leasehold-rt")
            .enable_all()
            .build()
            .expect("the leasehold runtime could not start its threads")
    })
}

/// Runs `notice` on the notifier thread, with the GIL. Callable from any
/// thread; never waits for the GIL itself.
pub fn notify(notice: impl FnOnce(Python<'_>) + Send + 'static) {
    static NOTIFIER: OnceLock<Mutex<mpsc::Sender<Notice>>> = OnceLock::new();
    let sender = NOTIFIER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Notice>();
        std::thread::Builder::new()
            .name("leasehold-notify".into())
            .spawn(move || {
                for notice in receiver {
                    // After the interpreter has finalized there is nobody
                    // left to tell.
                    if Python::try_attach(notice).is_none() {
                        return;
                    }
                }
            })
            .expect("the leasehold notifier thread could not start");
        Mutex::new(sender)
    });
    let sender = sender
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // The notifier only stops after finalization; a notice then is moot.
    let _ = sender.send(Box::new(notice));
}

/// Calls a Python callback with `arg` (or none), reporting what it raises
/// through `sys.unraisablehook`: a callback's error has no caller to go to.
pub fn call_reporting(py: Python<'_>, callback: &Py<PyAny>, arg: Option<Py<PyAny>>) {
    let called = match arg {
        Some(arg) => callback.call1(py, (arg,)),
        None => callback.call0(py),
    };
    if let Err(error) = called {
        error.write_unraisable(py, Some(callback.bind(py)));
    }
}
