//! The rules at start-up, pure so that each case is a unit test: which
//! cluster id a node starts with ([`starting_id`]), and whether what its
//! peers answer lets a node on an empty data dir form a cluster
//! ([`judge_answers`]). [`super::establish`] does the asking and storing.

use super::ClusterId;
use crate::raft::node::Formation;
use leasehold_proto::v1::IdentifyResponse;
use rand::Rng;
use std::collections::BTreeMap;

/// What Raft state a data dir holds, besides a cluster id.
#[derive(Clone, Copy, Debug)]
pub enum Held<'a> {
    /// No vote and no log: a new node, or a member that lost its data.
    Nothing,
    /// A vote or a log, and the members of its latest membership.
    State { members: &'a BTreeMap<u64, String> },
}

/// The cluster id a node starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartingId {
    /// The data dir holds one: keep it.
    Stored(ClusterId),
    /// Store this one, durably, before Raft forms or hears of anything.
    Create(ClusterId),
    /// None until a leader sends one (see [`super::verdict::judge`]).
    Adopt,
}

/// Which id a node starts with, given the `stored` one, how it was told to
/// form, what its data dir `held`, and the cluster `token`.
pub fn starting_id(
    stored: Option<ClusterId>,
    formation: &Formation,
    held: Held<'_>,
    token: &str,
    rng: &mut impl Rng,
) -> StartingId {
    if let Some(id) = stored {
        return StartingId::Stored(id);
    }
    match (held, formation) {
        (_, Formation::Join) => StartingId::Adopt,
        // The upgrade path: a data dir written before cluster ids. Its
        // members must agree without talking, as at formation, so the id is
        // derived from the membership they share (`--peers` is ignored once
        // a data dir holds a cluster, and may be gone from the command line).
        (Held::State { members }, _) if members.is_empty() => StartingId::Adopt,
        (Held::State { members }, _) => StartingId::Create(ClusterId::derive(members, token)),
        (Held::Nothing, Formation::Alone { .. }) => StartingId::Create(ClusterId::random(rng)),
        (Held::Nothing, Formation::Initialize(members)) => {
            StartingId::Create(ClusterId::derive(members, token))
        }
    }
}

/// One peer's answer to `Identify`.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The id `--peers` lists at `addr`.
    pub listed_id: u64,
    /// Where it answered.
    pub addr: String,
    /// What it said.
    pub reply: IdentifyResponse,
}

/// Whether node `node_id` (listed at `own_addr`), on an empty data dir, may
/// form cluster `ours` after its peers gave `answers` (peers that did not
/// answer are not listed: not started yet, they cannot have seen it).
///
/// It may not if a peer has seen it take part in the cluster: it held votes
/// then and forgot them, and could now vote twice in a term. Nor if a peer
/// already belongs to another cluster: this node's Raft messages would be
/// refused there. A peer of the same cluster that never heard from this
/// node is the normal case of members started one after another.
pub fn judge_answers(
    node_id: u64,
    own_addr: &str,
    ours: &ClusterId,
    answers: &[Answer],
) -> Result<(), String> {
    if let Some(seen) = answers.iter().find(|a| a.reply.saw_asker) {
        let theirs = if seen.reply.cluster_id.is_empty() {
            ours.as_str()
        } else {
            &seen.reply.cluster_id
        };
        return Err(format!(
            "node {node_id} has an empty data dir, but its peers already form cluster {theirs} \
             (node {} at {} answered, and saw node {node_id} take part in it): a member that \
             lost its data must not rejoin with --peers, because it forgot its votes and could \
             vote twice in a term. Remove it and add it back: `leasehold member remove \
             {node_id}` on a live member, then start this node with --join on an empty data \
             dir and run `leasehold member add {node_id} {own_addr}`",
            seen.listed_id, seen.addr
        ));
    }
    let other = answers.iter().find(|a| {
        a.reply.formed && !a.reply.cluster_id.is_empty() && a.reply.cluster_id != ours.as_str()
    });
    if let Some(other) = other {
        return Err(format!(
            "node {node_id} would form cluster {ours} (from --peers and --cluster-token), but \
             node {} at {} already belongs to cluster {}: check that --peers lists the right \
             addresses, and give each cluster formed at the same addresses its own \
             --cluster-token; to add this node to cluster {} instead, start it with --join \
             and run `leasehold member add {node_id} {own_addr}` there",
            other.listed_id, other.addr, other.reply.cluster_id, other.reply.cluster_id
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn three() -> BTreeMap<u64, String> {
        (1..=3)
            .map(|id| (id, format!("10.0.0.{id}:7420")))
            .collect()
    }

    fn start(stored: Option<ClusterId>, formation: &Formation, held: Held<'_>) -> StartingId {
        starting_id(stored, formation, held, "t", &mut StdRng::seed_from_u64(1))
    }

    #[test]
    fn a_new_node_creates_joins_or_keeps_its_id() {
        let peers = Formation::Initialize(three());
        let derived = ClusterId::derive(&three(), "t");
        assert_eq!(
            start(None, &peers, Held::Nothing),
            StartingId::Create(derived.clone())
        );
        assert_eq!(
            start(None, &Formation::Join, Held::Nothing),
            StartingId::Adopt
        );
        let alone = Formation::Alone {
            addr: "10.0.0.1:7420".into(),
        };
        let StartingId::Create(random) = start(None, &alone, Held::Nothing) else {
            panic!("a one-member cluster creates an id");
        };
        let again = starting_id(
            None,
            &alone,
            Held::Nothing,
            "t",
            &mut StdRng::seed_from_u64(2),
        );
        assert_ne!(again, StartingId::Create(random), "random, not derived");
        let stored = ClusterId::derive(&three(), "other");
        for formation in [&peers, &alone, &Formation::Join] {
            assert_eq!(
                start(Some(stored.clone()), formation, Held::Nothing),
                StartingId::Stored(stored.clone())
            );
        }
    }

    #[test]
    fn a_data_dir_from_before_cluster_ids_derives_it_from_its_membership() {
        let members = three();
        let held = Held::State { members: &members };
        let derived = ClusterId::derive(&members, "t");
        let alone = Formation::Alone {
            addr: "10.0.0.1:7420".into(),
        };
        for formation in [&Formation::Initialize(three()), &alone] {
            assert_eq!(
                start(None, formation, held),
                StartingId::Create(derived.clone())
            );
        }
        assert_eq!(start(None, &Formation::Join, held), StartingId::Adopt);
        let none = BTreeMap::new();
        let voted_only = Held::State { members: &none };
        assert_eq!(start(None, &alone, voted_only), StartingId::Adopt);
    }

    fn answer(listed_id: u64, cluster_id: &str, formed: bool, saw_asker: bool) -> Answer {
        Answer {
            listed_id,
            addr: format!("10.0.0.{listed_id}:7420"),
            reply: IdentifyResponse {
                node_id: listed_id,
                cluster_id: cluster_id.into(),
                formed,
                saw_asker,
            },
        }
    }

    #[test]
    fn peers_that_saw_this_node_stop_it_and_say_how_to_rejoin() {
        let ours = ClusterId::derive(&three(), "t");
        let id = ours.as_str();
        let refused = judge_answers(
            2,
            "10.0.0.2:7420",
            &ours,
            &[answer(1, id, true, true), answer(3, id, true, false)],
        )
        .unwrap_err();
        for part in [
            "node 2 has an empty data dir",
            &format!("already form cluster {id}"),
            "node 1 at 10.0.0.1:7420 answered",
            "`leasehold member remove 2`",
            "with --join on an empty data dir",
            "`leasehold member add 2 10.0.0.2:7420`",
        ] {
            assert!(refused.contains(part), "{part:?} in {refused}");
        }
    }

    #[test]
    fn members_started_one_after_another_form_the_cluster_once() {
        let ours = ClusterId::derive(&three(), "t");
        let id = ours.as_str();
        // Node 1 formed and leads already; node 2 never ran: it may start.
        assert!(judge_answers(2, "a", &ours, &[answer(1, id, true, false)]).is_ok());
        // Nobody answers: nobody started yet.
        assert!(judge_answers(2, "a", &ours, &[]).is_ok());
        // A peer waiting with --join, or from before cluster ids.
        assert!(judge_answers(2, "a", &ours, &[answer(1, "", false, false)]).is_ok());
        assert!(judge_answers(2, "a", &ours, &[answer(1, "", true, false)]).is_ok());
    }

    #[test]
    fn a_peer_of_another_cluster_stops_it() {
        let ours = ClusterId::derive(&three(), "t");
        let theirs = ClusterId::derive(&three(), "u");
        let refused =
            judge_answers(2, "a:1", &ours, &[answer(3, theirs.as_str(), true, false)]).unwrap_err();
        assert!(
            refused.contains(&format!("would form cluster {ours}"))
                && refused.contains(&format!(
                    "node 3 at 10.0.0.3:7420 already belongs to cluster {theirs}"
                ))
                && refused.contains("--cluster-token"),
            "{refused}"
        );
    }
}
