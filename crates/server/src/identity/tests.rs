//! [`Identity`] over a real store: adopting a leader's id durably, refusing
//! other clusters, remembering who took part, and the `Identify` answer.

use super::*;
use crate::clock::TokioClock;
use crate::storage::{self, NoopListener};
use std::time::Duration;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn open(dir: &std::path::Path, node_id: u64) -> Arc<Identity> {
    let (log, _state_machine) = storage::open(dir, Arc::new(NoopListener)).unwrap();
    Arc::new(Identity::load(node_id, log.identity_store(), Arc::new(TokioClock)).unwrap())
}

/// Opens `dir` again once the tasks still holding it (storing the nodes
/// seen) let go of the database.
async fn reopen(dir: &std::path::Path, node_id: u64) -> Arc<Identity> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match storage::open(dir, Arc::new(NoopListener)) {
            Ok((log, _state_machine)) => {
                return Arc::new(
                    Identity::load(node_id, log.identity_store(), Arc::new(TokioClock)).unwrap(),
                )
            }
            Err(error) => assert!(tokio::time::Instant::now() < deadline, "{error}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_joining_node_adopts_the_first_leaders_id_durably_and_refuses_others() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), 4);
    assert_eq!(node.cluster_id(), None);
    node.admit(2, B, MessageKind::Vote).await.unwrap();
    assert_eq!(node.cluster_id(), None, "a candidate's id is not adopted");
    node.admit(1, A, MessageKind::AppendEntries).await.unwrap();
    assert_eq!(node.cluster_id_text(), A);
    for (sender, theirs) in [(2, B), (3, "")] {
        let refused = node
            .admit(sender, theirs, MessageKind::AppendEntries)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
        assert!(
            refused
                .message()
                .contains(&format!("node 4 belongs to cluster {A}")),
            "{refused:?}"
        );
        assert_eq!(refused.metadata().get(CLUSTER_ID_METADATA).unwrap(), A);
    }
    drop(node);
    let reopened = reopen(dir.path(), 4).await;
    assert_eq!(reopened.cluster_id_text(), A, "the adopted id was stored");
}

#[tokio::test]
async fn concurrent_leaders_messages_adopt_one_id() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), 4);
    let (first, second) = tokio::join!(
        node.admit(1, A, MessageKind::AppendEntries),
        node.admit(2, B, MessageKind::InstallSnapshot)
    );
    assert!(
        first.is_ok() != second.is_ok(),
        "exactly one id wins: {first:?} {second:?}"
    );
    let adopted = if first.is_ok() { A } else { B };
    assert_eq!(node.cluster_id_text(), adopted);
}

#[tokio::test]
async fn the_identify_answer_for_an_empty_and_a_formed_store() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), 2);
    let empty = node.identify(3, false);
    assert_eq!((empty.node_id, empty.cluster_id.as_str()), (2, ""));
    assert!(!empty.formed && !empty.saw_asker, "{empty:?}");
    assert!(node.identify(3, true).formed, "a vote or a log is formed");
    node.create(ClusterId::parse(A).unwrap()).await.unwrap();
    let formed = node.identify(3, false);
    assert!(formed.formed && formed.cluster_id == A, "{formed:?}");
    assert!(!formed.saw_asker);
    node.admit(3, A, MessageKind::Vote).await.unwrap();
    assert!(
        node.identify(3, true).saw_asker,
        "node 3 sent a Raft message"
    );
    assert!(!node.identify(1, true).saw_asker, "node 1 did not");
}

#[tokio::test]
async fn the_nodes_seen_taking_part_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let node = open(dir.path(), 1);
    node.saw(2);
    node.saw(3);
    node.saw(1);
    node.saw(0);
    let store = node.store.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while store.took_part().unwrap() != BTreeSet::from([2, 3]) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            store.took_part()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop((node, store));
    let reopened = reopen(dir.path(), 1).await;
    assert!(reopened.has_seen(2) && reopened.has_seen(3) && !reopened.has_seen(1));
}
