//! `leasehold member add ID ADDR | remove ID | ls`: changes and shows the
//! cluster's membership. Changes go to the leader (a follower's `NotLeader`
//! names it and the connection follows). `add` answers once the new node
//! caught up and votes; `ls` is the member list of `status`, asked of the
//! leader when the answering node knows one, because only the leader knows
//! how far the log reached each member.

use super::Global;
use crate::error::CliError;
use crate::output::{print_json, table};
use leasehold_client::wire::{Member, MembershipResponse, StatusResponse};
use leasehold_client::Client;
use serde_json::{json, Value};

/// `leasehold member ...`
#[derive(clap::Subcommand, Debug)]
pub enum MemberCmd {
    /// Adds node ID, reachable at ADDR (HOST:PORT), as a voter. Start it
    /// first with `leasehold serve --join --node-id ID --listen ADDR`; this
    /// answers once it caught up (by snapshot if it is far behind).
    Add {
        /// The new node's id (its --node-id).
        id: u64,
        /// Where the other nodes and clients reach it (HOST:PORT).
        addr: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Removes node ID from the cluster. Removing the leader is allowed: it
    /// steps down and the others elect a new one.
    Remove {
        /// The node to remove.
        id: u64,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Lists the members with their role and, from the leader, how far the
    /// log reached each one (matched index) and how far behind it is (lag).
    Ls {
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `member`.
pub async fn run(cmd: MemberCmd, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    match cmd {
        MemberCmd::Add { id, addr, json } => {
            let reply = client.add_member(id, &addr).await?;
            print_members(&reply, json, &format!("node {id} is a voter"));
        }
        MemberCmd::Remove { id, json } => {
            let reply = client.remove_member(id).await?;
            print_members(&reply, json, &format!("node {id} is removed"));
        }
        MemberCmd::Ls { json } => {
            let status = leader_status(&client, global).await?;
            let leader_view = status.state == "Leader";
            if json {
                print_json(&json!({
                    "answered_by": status.node_id,
                    "leader": status.leader,
                    "members": members_json(&status.members, leader_view),
                }));
            } else {
                if !leader_view {
                    eprintln!(
                        "note: node {} is not the leader and no leader answered; matched index and lag are unknown",
                        status.node_id
                    );
                }
                print!("{}", table(&member_rows(&status.members, leader_view)));
            }
        }
    }
    Ok(())
}

/// The answering node's status, or the leader's when the answering node
/// names a reachable leader (only the leader knows replication progress).
async fn leader_status(client: &Client, global: &Global) -> Result<StatusResponse, CliError> {
    let status = client.status().await?;
    if status.state == "Leader" || status.leader == 0 {
        return Ok(status);
    }
    let Some(leader) = status.members.iter().find(|m| m.id == status.leader) else {
        return Ok(status);
    };
    let at_leader = Global {
        endpoints: leader.addr.clone(),
        ..global.clone()
    };
    let from_leader = match at_leader.client().await {
        Ok(leader_client) => leader_client.status().await.ok(),
        Err(_) => None,
    };
    Ok(from_leader.unwrap_or(status))
}

fn print_members(reply: &MembershipResponse, json: bool, done: &str) {
    // The leader answers membership changes, so progress is its view.
    if json {
        print_json(&json!({
            "revision": reply.header.as_ref().map_or(0, |h| h.revision),
            "members": members_json(&reply.members, true),
        }));
    } else {
        println!("{done}");
        print!("{}", table(&member_rows(&reply.members, true)));
    }
}

/// Members as JSON. `leader_view`: the list came from the leader, so
/// `matched_index` and `lag` are known (otherwise they are null).
/// `reachable` and `last_contact_ms` are the answering node's view (null
/// where it has none).
pub fn members_json(members: &[Member], leader_view: bool) -> Value {
    let known = |n: u64| leader_view.then_some(n);
    Value::Array(
        members
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "addr": m.addr,
                    "voter": m.voter,
                    "role": m.role,
                    "matched_index": known(m.matched_index),
                    "lag": known(m.lag),
                    "reachable": m.reachable,
                    "last_contact_ms": m.last_contact_ms,
                    "protocol": m.protocol,
                })
            })
            .collect(),
    )
}

/// The header row and one row per member.
pub fn member_rows(members: &[Member], leader_view: bool) -> Vec<Vec<String>> {
    let mut rows = vec![["MEMBER", "ADDR", "ROLE", "MATCHED", "LAG"]
        .map(String::from)
        .to_vec()];
    let known = |n: u64| {
        if leader_view {
            n.to_string()
        } else {
            "-".to_owned()
        }
    };
    for m in members {
        rows.push(vec![
            m.id.to_string(),
            m.addr.clone(),
            m.role.clone(),
            known(m.matched_index),
            known(m.lag),
        ]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, role: &str, matched_index: u64, lag: u64) -> Member {
        Member {
            id,
            addr: format!("127.0.0.1:{}", 7420 + id),
            voter: role != "Learner",
            role: role.into(),
            matched_index,
            lag,
            ..Default::default()
        }
    }

    #[test]
    fn progress_is_shown_only_from_the_leader() {
        let members = [member(1, "Leader", 9, 0), member(4, "Learner", 2, 7)];
        let from_leader = members_json(&members, true);
        assert_eq!(from_leader[1]["lag"], 7);
        assert_eq!(from_leader[1]["role"], "Learner");
        let from_follower = members_json(&members, false);
        assert!(from_follower[1]["lag"].is_null());
        assert_eq!(member_rows(&members, false)[2][4], "-");
        assert_eq!(
            member_rows(&members, true)[1],
            ["1", "127.0.0.1:7421", "Leader", "9", "0"]
        );
    }
}
