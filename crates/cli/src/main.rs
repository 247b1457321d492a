//! # leasehold
//!
//! The `leasehold` command: `serve` runs a node; every other command is a
//! thin shell over the client library, `leasehold-client` (its one-shot
//! API for single calls, its kept leases for `lock` and `lease keepalive`),
//! which owns endpoints, timeouts, retries and the typed errors (docs/DESIGN.md
//! §4). This file only parses and dispatches. Layout: [`commands`] (one
//! file per command group), [`error`] (the client's errors → exit codes),
//! [`exit`] (every exit code), [`output`] and [`lock_view`] (JSON and
//! tables), [`duration`] (duration flags), [`owner`] (`KEY=VALUE` flags).
//! `bench` is the `leasehold-bench` crate, which drives the same library.

/// `println!` for this crate: std's, except that a reader that went away
/// (`leasehold status | head -1`) ends the command quietly instead of
/// panicking (see [`output::write_stdout`]). Defined before the modules so
/// that every `println!` in them is this one.
macro_rules! println {
    () => {
        $crate::output::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for this crate, as [`println!`].
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*))
    };
}

/// The heap allocator: mimalloc 2.0, not glibc's malloc. Rows this small
/// pay glibc an 8-byte header and a round-up to 16 bytes each, and the
/// load's short-lived blocks leave holes between them; mimalloc keeps no
/// header and size classes 8 to 16 bytes apart. A million one-lock leases:
/// about 65 MiB less RSS, at the same throughput (docs/DESIGN.md §6d).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod commands;
mod config_file;
mod duration;
mod error;
mod exit;
mod lock_view;
mod output;
mod owner;
mod supervise;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use commands::{
    acquire, fenced, force_release, get, lease, lock, ls, member, release, serve, snapshot, status,
    Global,
};
use commands::{audit, auth, diagnose, drill, elect, events, packaging};
use error::CliError;
use exit::Exit;
use std::process::ExitCode;

/// Leasehold: distributed locks with fencing tokens.
#[derive(Parser, Debug)]
#[command(name = "leasehold", version, about)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs a server node until SIGINT or SIGTERM.
    Serve(serve::ServeArgs),
    /// Grants, renews, revokes or describes leases.
    Lease {
        #[command(subcommand)]
        cmd: lease::LeaseCmd,
    },
    /// Runs a command while holding a lock; stops it if the lock is lost.
    Lock(lock::LockArgs),
    /// Leader election: campaigns and runs a command while leading (stops
    /// it if the lead is lost), or observes who leads.
    Elect(elect::ElectArgs),
    /// Acquires a lock once (granting a fresh lease unless --lease) and exits.
    Acquire(acquire::AcquireArgs),
    /// Releases a lock held by (lease, token).
    Release(release::ReleaseArgs),
    /// Break-glass: frees a lock from a holder that will not let go.
    ForceRelease(force_release::ForceReleaseArgs),
    /// Prints what happened to locks (acquired, released, expired, ...);
    /// with --follow, each new event as it happens.
    Events(events::EventsArgs),
    /// Samples locks twice and says, with evidence, which are healthy,
    /// orphaned, renewing past their work, held by a gone owner, released
    /// under the wrong key, or starving waiters; and reports clock skew.
    Diagnose(diagnose::DiagnoseArgs),
    /// Rehearses the stale-owner incidents (a holder killed, paused,
    /// partitioned, its wall clock stepped, force-released; renewal after
    /// the work; a near-miss release) and says PASS or FAIL for each.
    Drill(drill::DrillArgs),
    /// A drill's holder process (run by `drill`, not by hand).
    #[command(hide = true)]
    DrillWorker(drill::worker::WorkerArgs),
    /// Describes one lock.
    Get(get::GetArgs),
    /// Lists locks by name prefix.
    Ls(ls::LsArgs),
    /// Writes (as a lock's holder) or reads the built-in fenced store.
    Fenced {
        #[command(subcommand)]
        cmd: fenced::FencedCmd,
    },
    /// Shows the cluster as the answering node sees it.
    Status(status::StatusArgs),
    /// Prints the shell completion script (bash, zsh, fish, ...).
    Completions(packaging::CompletionsArgs),
    /// Prints the man page, or writes one per command with --dir.
    Man(packaging::ManArgs),
    /// Backups: saves a consistent copy of the state, or checks one.
    Snapshot {
        #[command(subcommand)]
        cmd: snapshot::SnapshotCmd,
    },
    /// Adds, removes or lists the members of the cluster.
    Member {
        #[command(subcommand)]
        cmd: member::MemberCmd,
    },
    /// Measures throughput and latency against a server.
    Bench(leasehold_bench::BenchArgs),
    /// Enables, disables or bootstraps auth, or shows its status.
    Auth {
        #[command(subcommand)]
        cmd: auth::AuthCmd,
    },
    /// Roles: rules allowing or denying verbs on name prefixes.
    Role {
        #[command(subcommand)]
        cmd: auth::RoleCmd,
    },
    /// Users (principals): their roles and quotas.
    User {
        #[command(subcommand)]
        cmd: auth::UserCmd,
    },
    /// Bearer tokens: create (shown once), revoke, list.
    Token {
        #[command(subcommand)]
        cmd: auth::TokenCmd,
    },
    /// The audit trail: force releases, auth and membership changes,
    /// refused requests.
    Audit(audit::AuditArgs),
}

fn main() -> ExitCode {
    // Help and version exit 0; usage errors exit 2 (Exit::Usage).
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = Cli::command()
        .try_get_matches_from(&argv)
        .unwrap_or_else(|err| err.exit());
    let merged = match config_file::merge(Cli::command(), argv, matches) {
        Ok(merged) => merged,
        Err(err) => {
            eprintln!("error: {}", err.message);
            return err.exit.into();
        }
    };
    let matches = merged.matches;
    if let Some(("serve", serve)) = matches.subcommand() {
        if serve.get_flag("print_config") {
            let cli = Cli::command();
            let serve_cmd = cli.find_subcommand("serve").expect("serve is a command");
            print!(
                "{}",
                config_file::effective(serve_cmd, serve, &merged.from_file)
            );
            return ExitCode::SUCCESS;
        }
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    let json = wants_json(&matches);
    if matches!(cli.command, Command::Serve(_) | Command::Bench(_)) {
        leasehold_server::open_files::raise_to_hard_limit();
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Command::Serve(args) = &cli.command {
        runtime.worker_threads(serve::worker_threads(args));
        serve::no_lifo_slot(&mut runtime);
    }
    let runtime = match runtime.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return Exit::Other.into();
        }
    };
    let outcome = runtime.block_on(run(cli));
    // Do not wait for stragglers (a server task stuck on an open stream, a
    // blocking thread): everything that must be durable already is.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {}", err.message);
            if json {
                output::print_json(&err.json());
            }
            err.exit.into()
        }
    }
}

/// Whether the invoked (sub)command was given `--json`: its failure is then
/// also a JSON document on stdout. Found on the parsed arguments, so every
/// command with a `--json` flag gets it without saying so.
fn wants_json(matches: &clap::ArgMatches) -> bool {
    let mut current = matches;
    loop {
        if let Ok(Some(true)) = current.try_get_one::<bool>("json") {
            return true;
        }
        match current.subcommand() {
            Some((_, sub)) => current = sub,
            None => return false,
        }
    }
}

/// Runs the command; `Ok` carries the exit code (0, or for `lock` the
/// command's own, for `diagnose` 8 if anything is unhealthy, for `drill`
/// 9 if a drill failed).
async fn run(cli: Cli) -> Result<u8, CliError> {
    let global = &cli.global;
    match cli.command {
        Command::Lock(args) => return lock::run(args, global).await,
        Command::Elect(args) => return elect::run(args, global).await,
        Command::Diagnose(args) => return diagnose::run(args, global).await,
        Command::Drill(args) => return drill::run(args, global).await,
        _ => {}
    }
    run_plain(cli.command, global)
        .await
        .map(|()| Exit::Ok.code())
}

async fn run_plain(command: Command, global: &Global) -> Result<(), CliError> {
    match command {
        Command::Lock(_) | Command::Elect(_) => unreachable!("handled by run"),
        Command::Serve(args) => serve::run(args).await,
        Command::Lease { cmd } => lease::run(cmd, global).await,
        Command::Acquire(args) => acquire::run(args, global).await,
        Command::Release(args) => release::run(args, global).await,
        Command::ForceRelease(args) => force_release::run(args, global).await,
        Command::Events(args) => events::run(args, global).await,
        Command::Diagnose(_) => unreachable!("handled by run"),
        Command::Drill(_) => unreachable!("handled by run"),
        Command::DrillWorker(args) => drill::worker::run(args, global).await,
        Command::Get(args) => get::run(args, global).await,
        Command::Ls(args) => ls::run(args, global).await,
        Command::Fenced { cmd } => fenced::run(cmd, global).await,
        Command::Status(args) => status::run(args, global).await,
        Command::Snapshot { cmd } => snapshot::run(cmd, global).await,
        Command::Completions(args) => packaging::completions(args, Cli::command()),
        Command::Man(args) => packaging::man(args, Cli::command()),
        Command::Member { cmd } => member::run(cmd, global).await,
        Command::Bench(args) => {
            let (tls, auth_token) = (global.tls()?, global.auth_token.clone());
            leasehold_bench::run(args, tls, auth_token, output::write_stdout)
                .await
                .map_err(error::from_bench)
        }
        Command::Auth { cmd } => auth::run_auth(cmd, global).await,
        Command::Role { cmd } => auth::run_role(cmd, global).await,
        Command::User { cmd } => auth::run_user(cmd, global).await,
        Command::Token { cmd } => auth::run_token(cmd, global).await,
        Command::Audit(args) => audit::run(args, global).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// A global flag whose id is also a subcommand's field id makes clap
    /// panic while parsing (the TLS `--key` once met `fenced put`'s
    /// positional `key`; `serve` has `tls_cert` and `tls_key`): every subcommand with such fields parses next to
    /// every global flag.
    #[test]
    fn global_flags_parse_next_to_every_subcommand_field() {
        let globals = [
            "--cacert",
            "ca.pem",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
            "--auth-token",
            "lh_x",
        ];
        let lines: [&[&str]; 5] = [
            &["serve", "--tls-cert", "s.pem", "--tls-key", "s.key"],
            &["fenced", "put", "cfg/a", "v", "--lock", "l", "--token", "1"],
            &["fenced", "get", "cfg/a"],
            &["acquire", "jobs/a", "--ttl", "5s"],
            &["bench", "--workload", "uncontended", "--clients", "1"],
        ];
        for line in lines {
            let mut argv = vec!["leasehold"];
            argv.extend_from_slice(&globals);
            argv.extend_from_slice(line);
            let parsed = Cli::try_parse_from(&argv);
            assert!(parsed.is_ok(), "{argv:?}: {parsed:?}");
            let cli = parsed.unwrap();
            assert_eq!(
                cli.global.client_key.as_deref(),
                Some(std::path::Path::new("k.pem"))
            );
        }
    }
}
