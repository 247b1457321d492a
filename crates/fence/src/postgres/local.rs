//! Where the test suites and examples find PostgreSQL: the role and
//! database `.ci/run` creates on a development machine, unless
//! `LEASEHOLD_TEST_POSTGRES` names another. One place, so the adapter's
//! tests, the process drills and the example agree.

/// The connection `.ci/run` sets up (role and database `leasehold_test`).
pub const LOCAL_DSN: &str =
    "host=127.0.0.1 port=5432 user=leasehold_test password=leasehold_test dbname=leasehold_test";

/// The connection string for tests: `LEASEHOLD_TEST_POSTGRES`, else
/// [`LOCAL_DSN`]. Under `CI=true` the variable must be set (a CI run that
/// lost its database must fail, not quietly test something else).
pub fn test_dsn() -> String {
    match std::env::var("LEASEHOLD_TEST_POSTGRES") {
        Ok(dsn) => dsn,
        Err(_) if in_ci() => panic!(
            "CI=true but LEASEHOLD_TEST_POSTGRES is not set: .ci/run must start PostgreSQL and export it"
        ),
        Err(_) => LOCAL_DSN.to_owned(),
    }
}

/// Whether this is a CI run (`CI=true`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| ci == "true")
}
