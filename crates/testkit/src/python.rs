//! Where the tests find a Python interpreter that has what they import: a
//! virtualenv `.ci/run` makes under `~/.cache/leasehold/` and exports in
//! an environment variable. Under `CI=true` a missing or incomplete
//! interpreter fails the test; elsewhere the test tries `.ci/run`'s
//! virtualenv, then `python3`, and without one skips with a loud notice.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// What a test needs from Python.
#[derive(Clone, Copy, Debug)]
pub struct Wanted {
    /// The variable `.ci/run` sets to the interpreter (`LEASEHOLD_TEST_PYTHON`).
    pub variable: &'static str,
    /// The virtualenv's interpreter, relative to `$HOME`.
    pub venv_python: &'static str,
    /// A Python statement that succeeds only with everything installed.
    pub imports: &'static str,
    /// What to install, for the messages (`crates/cli/tests/python/requirements.txt`).
    pub install: &'static str,
}

/// The interpreter for `test`, or `None` (after a loud notice) outside CI
/// when there is none. Panics under `CI=true` without one, and whenever the
/// variable names an interpreter that lacks the imports.
pub fn interpreter(wanted: Wanted, test: &str) -> Option<PathBuf> {
    if let Some(configured) = std::env::var_os(wanted.variable) {
        let python = PathBuf::from(configured);
        assert!(
            can_import(&python, wanted.imports),
            "{}={} cannot `{}`: install {} into it (.ci/run does)",
            wanted.variable,
            python.display(),
            wanted.imports,
            wanted.install
        );
        return Some(python);
    }
    assert!(
        !crate::in_ci(),
        "CI=true but {} is not set: .ci/run must make the Python virtualenv and export it",
        wanted.variable
    );
    let venv = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(wanted.venv_python));
    let found = venv
        .into_iter()
        .chain([PathBuf::from("python3")])
        .find(|python| can_import(python, wanted.imports));
    if found.is_none() {
        eprintln!(
            "\n!!!!!!!! SKIPPING {test}: no Python that can `{}`. Run .ci/run, or set {} to an \
             interpreter with {} installed. !!!!!!!!\n",
            wanted.imports, wanted.variable, wanted.install
        );
    }
    found
}

fn can_import(python: &PathBuf, imports: &str) -> bool {
    Command::new(python)
        .args(["-c", imports])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The Python client's tests: a virtualenv with the `leasehold` package
/// (`pip install ./clients/python`) and its test requirements, which
/// `.ci/run` makes and exports as `LEASEHOLD_TEST_PYTHON_CLIENT`.
pub const CLIENT: Wanted = Wanted {
    variable: "LEASEHOLD_TEST_PYTHON_CLIENT",
    venv_python: ".cache/leasehold/python-client/bin/python",
    imports: "import leasehold, pytest, psycopg, redis",
    install: "./clients/python and clients/python/requirements-test.txt",
};
