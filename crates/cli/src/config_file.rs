//! `serve --config FILE`: settings from a TOML file, below the command line
//! and the environment. Each key is a `serve` flag's long name
//! (`data-dir = "/var/lib/leasehold"`, `join = true`, `node-id = 2`); an
//! unknown key is refused naming it. The file's settings become flags
//! added to the command line, but only for flags neither the command line
//! nor their `LEASEHOLD_*` variable set, and the whole is parsed again, so
//! a file value is checked exactly as the flag would be, and the
//! precedence (flag > environment > file > default) is clap's own.
//!
//! `serve --print-config` prints the effective settings in the same form,
//! each with where it came from, and exits.

use crate::error::CliError;
use crate::exit::Exit;
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};
use std::ffi::OsString;
use std::path::Path;

/// Flags of `serve` a file does not set: about the file itself, or a
/// one-time action that a file, read at every start, would repeat.
const NOT_IN_A_FILE: [&str; 7] = [
    "config",
    "print-config",
    "help",
    "force-new-cluster",
    "token-floor",
    "revision-gap",
    "keep-leases",
];
/// Of those, the one-time actions (refused with their own sentence).
const ONE_TIME: [&str; 4] = [
    "force-new-cluster",
    "token-floor",
    "revision-gap",
    "keep-leases",
];

/// The command line's matches with a config file's settings merged in,
/// and the flags (by long name) the file set.
pub struct Merged {
    pub matches: ArgMatches,
    pub from_file: Vec<String>,
}

/// `matches` with the settings of `serve --config FILE` merged in (and
/// `argv` the command line they were parsed from); unchanged without one.
pub fn merge(cli: Command, argv: Vec<OsString>, matches: ArgMatches) -> Result<Merged, CliError> {
    let unchanged = |matches| Merged {
        matches,
        from_file: Vec::new(),
    };
    let Some(("serve", serve)) = matches.subcommand() else {
        return Ok(unchanged(matches));
    };
    let Some(file) = serve.get_one::<std::path::PathBuf>("config") else {
        return Ok(unchanged(matches));
    };
    let serve_cmd = cli
        .find_subcommand("serve")
        .expect("serve is a command")
        .clone();
    let settings = read(file)?;
    let mut argv = argv;
    let mut from_file = Vec::new();
    for (key, value) in settings {
        if ONE_TIME.contains(&key.as_str()) {
            return Err(CliError::new(
                Exit::Usage,
                format!(
                    "{key} in the config file {}: it is a one-time action (a file is read at \
                     every start, and would repeat it); pass it on the command line, once",
                    file.display()
                ),
            ));
        }
        let arg = serve_cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && !NOT_IN_A_FILE.contains(&key.as_str()))
            .ok_or_else(|| unknown(file, &key, &serve_cmd))?;
        let id = arg.get_id().as_str();
        let given = serve.value_source(id);
        if matches!(
            given,
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let is_switch = matches!(arg.get_action(), ArgAction::SetTrue);
        argv.extend(flag_tokens(file, &key, &value, is_switch)?);
        from_file.push(key);
    }
    let matches = cli.try_get_matches_from(argv).map_err(|e| {
        CliError::new(
            Exit::Usage,
            format!("with the config file {}: {}", file.display(), e.render()),
        )
    })?;
    Ok(Merged { matches, from_file })
}

/// The file's settings, in order.
fn read(file: &Path) -> Result<Vec<(String, toml::Value)>, CliError> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        CliError::new(
            Exit::Usage,
            format!("cannot read the config file {}: {e}", file.display()),
        )
    })?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        CliError::new(
            Exit::Usage,
            format!(
                "the config file {} is not valid TOML: {}",
                file.display(),
                e.message()
            ),
        )
    })?;
    Ok(table.into_iter().collect())
}

fn unknown(file: &Path, key: &str, serve: &Command) -> CliError {
    let known: Vec<&str> = serve
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|long| !NOT_IN_A_FILE.contains(long))
        .collect();
    CliError::new(
        Exit::Usage,
        format!(
            "unknown key {key:?} in the config file {}: the keys are serve's flags ({})",
            file.display(),
            known.join(", ")
        ),
    )
}

/// The command-line tokens of one setting.
fn flag_tokens(
    file: &Path,
    key: &str,
    value: &toml::Value,
    switch: bool,
) -> Result<Vec<OsString>, CliError> {
    let flag = OsString::from(format!("--{key}"));
    let bad = |what: &str| {
        CliError::new(
            Exit::Usage,
            format!("{key} in the config file {} must be {what}", file.display()),
        )
    };
    Ok(match (value, switch) {
        (toml::Value::Boolean(true), true) => vec![flag],
        (toml::Value::Boolean(false), true) => Vec::new(),
        (_, true) => return Err(bad("true or false")),
        (toml::Value::String(text), false) => vec![flag, text.into()],
        (toml::Value::Integer(n), false) => vec![flag, n.to_string().into()],
        (toml::Value::Float(x), false) => vec![flag, x.to_string().into()],
        _ => return Err(bad("a string or a number")),
    })
}

/// The effective settings of `serve`, as a config file with each setting's
/// source in a comment.
pub fn effective(serve_cmd: &Command, serve: &ArgMatches, from_file: &[String]) -> String {
    let mut out = String::from("# leasehold serve: the effective settings\n");
    for arg in serve_cmd.get_arguments() {
        let Some(long) = arg.get_long().filter(|l| !NOT_IN_A_FILE.contains(l)) else {
            continue;
        };
        let id = arg.get_id().as_str();
        let source = match serve.value_source(id) {
            _ if from_file.iter().any(|key| key == long) => "config file",
            Some(ValueSource::CommandLine) => "flag",
            Some(ValueSource::EnvVariable) => "environment",
            Some(ValueSource::DefaultValue) => "default",
            _ => "unset",
        };
        let raw: Vec<String> = serve
            .get_raw(id)
            .map(|values| values.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let line = match (arg.get_action(), raw.first()) {
            (ArgAction::SetTrue, _) => format!("{long} = {}", serve.get_flag(id)),
            // A JSON string is a TOML basic string (the same escapes).
            (_, Some(value)) => format!("{long} = {}", serde_json::Value::from(value.as_str())),
            (_, None) => format!("# {long} ="),
        };
        out.push_str(&format!("{line:<50} # {source}\n"));
    }
    out
}
