//! What the membership and probe tests share: a membership of test nodes
//! and the gRPC code and message an error becomes.

use super::membership::Members;
use crate::api::ApiError;
use openraft::{BasicNode, Membership};
use std::collections::BTreeMap;
use tonic::{Code, Status};

/// Voters and learners at `10.0.0.<id>:7420`.
pub fn members(voters: &[u64], learners: &[u64]) -> Members {
    let nodes = voters
        .iter()
        .chain(learners)
        .map(|&id| (id, BasicNode::new(format!("10.0.0.{id}:7420"))))
        .collect::<BTreeMap<_, _>>();
    Membership::new(vec![voters.iter().copied().collect()], nodes)
}

/// The code and message of `error` as a status.
pub fn reason(error: ApiError) -> (Code, String) {
    let status = Status::from(error);
    (status.code(), status.message().to_owned())
}
