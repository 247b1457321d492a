//! The Python client (`clients/python`, `import leasehold`) through its own
//! pytest suite, against real `leasehold serve` processes of this build
//! (the suite starts them from `LEASEHOLD_BIN`, set here to the binary
//! cargo built), with PostgreSQL and Redis for its fencing adapters.
//!
//! The suite's TLS tests need certificates; this test makes them (the test
//! kit's CA: `ca.crt`, `server.crt`/`.key`, and client certificates for the
//! principals `alice` and `bob`) in a temporary directory it passes as
//! `LEASEHOLD_TEST_TLS_DIR`.
//!
//! The interpreter is `LEASEHOLD_TEST_PYTHON_CLIENT`: a virtualenv where
//! `.ci/run` installs the package (`pip install ./clients/python`) and
//! `clients/python/requirements-test.txt`. Because the package is
//! installed, not read from the tree, the test first checks that the
//! installed copy is the source's: a stale install fails with the command
//! that refreshes it instead of testing old code.

use leasehold_testkit::python::{interpreter, CLIENT};
use leasehold_testkit::tls::Ca;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Bound on the whole suite (each test bounds its own waits).
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

fn package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/python")
}

#[test]
fn t180_python_client_suite() {
    let Some(python) = interpreter(CLIENT, "t180_python_client_suite") else {
        return;
    };
    assert_installed_copy_is_current(&python);
    let certificates = tempfile::tempdir().expect("temp dir for certificates");
    write_certificates(certificates.path());
    let log = tempfile::NamedTempFile::new().expect("temp file for pytest's output");
    let started = Instant::now();
    let mut child = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(package_dir())
        .env("LEASEHOLD_BIN", env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_TEST_TLS_DIR", certificates.path())
        .stdin(Stdio::null())
        .stdout(log.reopen().expect("reopen log"))
        .stderr(log.reopen().expect("reopen log"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} -m pytest: {e}", python.display()));
    let status = leasehold_testkit::wait_for("the pytest suite", SUITE_TIMEOUT, || {
        child.try_wait().expect("pytest status")
    });
    let output = fs::read_to_string(log.path()).unwrap_or_default();
    eprintln!("{output}\nthe suite ran in {:?}", started.elapsed());
    assert!(
        status.success(),
        "pytest failed ({status}); its output is above"
    );
}

/// The CA, the server's certificate (127.0.0.1) and two clients'.
fn write_certificates(dir: &Path) {
    let ca = Ca::new("t180 CA");
    ca.write(dir, "ca");
    ca.server().write(dir, "server");
    for principal in ["alice", "bob"] {
        ca.client(principal).write(dir, principal);
    }
}

/// Fails, naming the fix, if the installed package is older than the
/// source: a Python file differs, or a Rust source of the native module
/// (or of the crates it wraps) is newer than the installed extension.
fn assert_installed_copy_is_current(python: &Path) {
    let out = Command::new(python)
        .args([
            "-c",
            "import leasehold, os, leasehold._native as n; \
             print(os.path.dirname(leasehold.__file__)); print(n.__file__)",
        ])
        .output()
        .expect("ask python where leasehold is");
    assert!(out.status.success(), "import leasehold failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let installed = PathBuf::from(lines.next().expect("package dir"));
    let extension = PathBuf::from(lines.next().expect("extension path"));
    let refresh = format!(
        "the leasehold package installed for {} is older than the source: run .ci/run, or \
         `{} -m pip install --force-reinstall --no-deps ./clients/python`",
        python.display(),
        python.display()
    );
    let source = package_dir().join("python/leasehold");
    // An editable install (`maturin develop`) is the source itself.
    let copied = installed.canonicalize().ok() != source.canonicalize().ok();
    for file in python_files(&source).into_iter().filter(|_| copied) {
        let relative = file.strip_prefix(&source).expect("under the source dir");
        let copy = installed.join(relative);
        assert_eq!(
            fs::read(&file).ok(),
            fs::read(&copy).ok(),
            "{refresh} ({} differs)",
            relative.display()
        );
    }
    let built = modified(&extension);
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for dir in [
        package_dir().join("src"),
        crates.join("client/src"),
        crates.join("core/src"),
        crates.join("fence/src"),
    ] {
        for file in files(&dir) {
            assert!(
                modified(&file) <= built,
                "{refresh} ({} changed after the build)",
                file.display()
            );
        }
    }
}

fn python_files(dir: &Path) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "py" || e == "pyi"))
        .collect()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "__pycache__") {
                found.extend(files(&path));
            }
        } else {
            found.push(path);
        }
    }
    found
}

fn modified(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("mtime of {}: {e}", path.display()))
}
