//! Running `leasehold` commands against a [`Cluster`]: every live node,
//! one node alone, or a chosen set (e.g. one side of a partition).

use super::super::{command_to, spawn_captured, Run};
use super::Cluster;
use serde_json::Value;
use std::process::{Child, Command};

impl Cluster {
    /// A `leasehold` command with every live node as `--endpoints`.
    pub fn command(&self, args: &[&str]) -> Command {
        self.with_tls(command_to(&self.endpoints(), args))
    }

    /// A `leasehold` command aimed at node `id` alone (at its listen address).
    pub fn command_on(&self, id: u64, args: &[&str]) -> Command {
        self.with_tls(command_to(&self.endpoint(id), args))
    }

    /// `command` with the cluster's CA and client certificate, if it has TLS.
    fn with_tls(&self, mut command: Command) -> Command {
        if let Some(tls) = &self.tls {
            command.envs(tls.client_env());
        }
        command
    }

    /// A `leasehold` command with the nodes `ids` (in that order) as
    /// `--endpoints`: e.g. only the majority side of a partition.
    pub fn command_via(&self, ids: &[u64], args: &[&str]) -> Command {
        let urls: Vec<String> = ids.iter().map(|&id| self.endpoint(id)).collect();
        self.with_tls(command_to(&urls.join(","), args))
    }

    /// Runs a command against the live nodes to completion.
    pub fn cli(&self, args: &[&str]) -> Run {
        Run::of(self.command(args), args)
    }

    /// Runs a command against node `id` alone to completion.
    pub fn cli_on(&self, id: u64, args: &[&str]) -> Run {
        Run::of(self.command_on(id, args), args)
    }

    /// Runs a command against the nodes `ids` to completion.
    pub fn cli_via(&self, ids: &[u64], args: &[&str]) -> Run {
        Run::of(self.command_via(ids, args), args)
    }

    /// Runs a command that must exit 0 and print one JSON document.
    pub fn ok_json(&self, args: &[&str]) -> Value {
        self.cli(args).expect_code(0).json()
    }

    /// Starts a command against the live nodes in the background, output captured.
    pub fn spawn(&self, args: &[&str]) -> Child {
        spawn_captured(self.command(args))
    }
}
