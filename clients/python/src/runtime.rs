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
use std::sync::Mutex;
use tokio::runtime::Runtime;

/// Worker threads of the runtime: keepers and calls are I/O-bound; two let
/// one slow callback-free task not hold up the others.
const RUNTIME_WORKERS: usize = 2;

/// Work for the notifier: a call into Python.
type Notice = Box<dyn FnOnce(Python<'_>) + Send>;

/// A value made once per process: the pid that made it, and the value.
type PerProcess<T> = Mutex<Option<(u32, &'static T)>>;

/// The runtime, started on first use in each process: a child made by
/// `fork()` inherits the parent's runtime without its threads, so it
/// starts its own (the parent's copy is left alone: it cannot be stopped).
pub fn runtime() -> &'static Runtime {
    static RUNTIME: PerProcess<Runtime> = Mutex::new(None);
    per_process(&RUNTIME, || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_WORKERS)
            .thread_name("leasehold-rt")
            .enable_all()
            .build()
            .expect("the leasehold runtime could not start its threads")
    })
}

/// The value in `slot` made by this process, or a new one from `make`,
/// leaked: it lives as long as the process.
fn per_process<T>(slot: &PerProcess<T>, make: impl FnOnce() -> T) -> &'static T {
    let pid = std::process::id();
    let mut slot = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match *slot {
        Some((owner, made)) if owner == pid => made,
        _ => {
            let made: &'static T = Box::leak(Box::new(make()));
            *slot = Some((pid, made));
            made
        }
    }
}

/// Runs `notice` on the notifier thread, with the GIL. Callable from any
/// thread; never waits for the GIL itself.
pub fn notify(notice: impl FnOnce(Python<'_>) + Send + 'static) {
    static NOTIFIER: PerProcess<Mutex<mpsc::Sender<Notice>>> = Mutex::new(None);
    let sender = per_process(&NOTIFIER, start_notifier);
    let sender = sender
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // The notifier only stops after finalization; a notice then is moot.
    let _ = sender.send(Box::new(notice));
}

fn start_notifier() -> Mutex<mpsc::Sender<Notice>> {
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
