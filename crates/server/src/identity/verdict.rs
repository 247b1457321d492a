//! The rule for an incoming Raft message, by cluster id: pure, so that every
//! case is a unit test. [`Identity::admit`](super::Identity::admit) applies
//! it and does the I/O (adopting, logging).

use super::ClusterId;
use std::fmt;

/// Which Raft message arrived: only a leader's messages make a node adopt
/// a cluster id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// Log entries or a heartbeat, from a leader.
    AppendEntries,
    /// A snapshot, from a leader.
    InstallSnapshot,
    /// A candidate asking for a vote.
    Vote,
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MessageKind::AppendEntries => "AppendEntries",
            MessageKind::InstallSnapshot => "InstallSnapshot",
            MessageKind::Vote => "Vote",
        })
    }
}

/// What to do with a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to Raft.
    Accept,
    /// This node has no cluster id yet and a leader of cluster `.0` writes
    /// to it (it was added with `member add`): store that id, then accept.
    Adopt(ClusterId),
    /// It comes from another cluster (or from a node without an id, to a
    /// node that has one): refuse it.
    Refuse,
}

/// Judges a message that carries the sender's cluster id `theirs` (empty:
/// none), arriving at a node whose id is `ours`.
///
/// - A node with an id accepts only that id: an empty one counts as
///   different, because a node without an id (a member that lost its data,
///   or a build from before cluster ids) must not vote or lead in it.
/// - A node without an id (started with `--join`, not added yet, or a data
///   dir from before cluster ids) adopts the id of the first leader that
///   sends it entries or a snapshot, and accepts votes and messages from
///   nodes without an id: nothing identifies it yet.
pub fn judge(ours: Option<&ClusterId>, theirs: &str, kind: MessageKind) -> Verdict {
    match ours {
        Some(ours) if ours.as_str() == theirs => Verdict::Accept,
        Some(_) => Verdict::Refuse,
        None if theirs.is_empty() => Verdict::Accept,
        None => match (ClusterId::parse(theirs), kind) {
            (None, _) => Verdict::Refuse,
            (Some(_), MessageKind::Vote) => Verdict::Accept,
            (Some(id), MessageKind::AppendEntries | MessageKind::InstallSnapshot) => {
                Verdict::Adopt(id)
            }
        },
    }
}

/// The sentence a refused sender gets (and the receiver logs): both ids,
/// both nodes, and what to do.
pub fn refusal(node_id: u64, ours: Option<&ClusterId>, sender: u64, theirs: &str) -> String {
    let ours = ours.map_or_else(|| "none".to_owned(), ClusterId::to_string);
    let theirs = if theirs.is_empty() { "none" } else { theirs };
    format!(
        "node {node_id} belongs to cluster {ours} and refuses Raft messages from node {sender}, \
         which belongs to cluster {theirs}: nodes of different clusters must not vote or \
         replicate to each other. Compare `leasehold status` on both; a member that lost its \
         data, or was replaced by a node of another cluster, rejoins by `leasehold member \
         remove ID` on its cluster, then `leasehold serve --join` on an empty data dir and \
         `leasehold member add ID ADDR`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use MessageKind::{AppendEntries, InstallSnapshot, Vote};

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn id(text: &str) -> ClusterId {
        ClusterId::parse(text).expect("an id")
    }

    #[test]
    fn a_node_with_an_id_accepts_only_that_id() {
        for kind in [AppendEntries, InstallSnapshot, Vote] {
            assert_eq!(judge(Some(&id(A)), A, kind), Verdict::Accept);
            assert_eq!(judge(Some(&id(A)), B, kind), Verdict::Refuse);
            assert_eq!(judge(Some(&id(A)), "", kind), Verdict::Refuse, "empty");
            assert_eq!(judge(Some(&id(A)), "garbage", kind), Verdict::Refuse);
        }
    }

    #[test]
    fn a_node_without_an_id_adopts_a_leaders_and_nothing_else() {
        assert_eq!(judge(None, A, AppendEntries), Verdict::Adopt(id(A)));
        assert_eq!(judge(None, A, InstallSnapshot), Verdict::Adopt(id(A)));
        assert_eq!(
            judge(None, A, Vote),
            Verdict::Accept,
            "a candidate is no leader"
        );
        for kind in [AppendEntries, InstallSnapshot, Vote] {
            assert_eq!(judge(None, "", kind), Verdict::Accept, "nothing to compare");
            assert_eq!(judge(None, "AAAA", kind), Verdict::Refuse, "not an id");
        }
    }

    #[test]
    fn the_refusal_names_both_ids_and_the_sender() {
        let text = refusal(3, Some(&id(A)), 1, B);
        assert!(
            text.contains(&format!("node 3 belongs to cluster {A}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("from node 1, which belongs to cluster {B}")),
            "{text}"
        );
        let text = refusal(3, Some(&id(A)), 1, "");
        assert!(text.contains("which belongs to cluster none"), "{text}");
    }
}
