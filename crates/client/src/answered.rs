//! Which endpoint answered a call, for tools that record it (the fault
//! harness names the node behind every operation of its history).
//!
//! **Why a task-local and not a field of every reply**: the typed replies
//! (`Acquired`, `Revision`, ...) are the API users program against; the
//! answering endpoint is a diagnostic. A call run inside [`answered_by`]
//! notes the URL of the endpoint whose answer ended it (a reply or a
//! definite error, after however many fail-overs); outside one, noting
//! costs one failed task-local lookup.

use std::cell::RefCell;
use std::future::Future;

tokio::task_local! {
    static ANSWERED: RefCell<Option<String>>;
}

/// Runs `call` (one client operation) and returns its output with the
/// URL of the endpoint that answered it, if one did (`None` when every
/// attempt failed in transit or timed out).
pub async fn answered_by<F: Future>(call: F) -> (F::Output, Option<String>) {
    ANSWERED
        .scope(RefCell::new(None), async {
            let output = call.await;
            let url = ANSWERED.with(|answered| answered.borrow_mut().take());
            (output, url)
        })
        .await
}

/// Notes that the endpoint at `url` answered the current call.
pub(crate) fn note(url: &str) {
    let _ = ANSWERED.try_with(|answered| *answered.borrow_mut() = Some(url.to_owned()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_noted_endpoint_of_the_call_is_returned() {
        let ((), url) = answered_by(async {
            note("http://127.0.0.1:1");
            note("http://127.0.0.1:2");
        })
        .await;
        assert_eq!(url.as_deref(), Some("http://127.0.0.1:2"));
        let ((), none) = answered_by(async {}).await;
        assert_eq!(none, None);
        note("http://127.0.0.1:3"); // outside a scope: ignored
    }
}
