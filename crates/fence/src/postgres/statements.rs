//! The adapter's SQL, as public constants: the Rust adapter runs exactly
//! these, and any other client of the same tables (the Python adapter,
//! `leasehold.fence.postgres`) takes them from here instead of retyping
//! them, so the two cannot drift apart. Placeholders are PostgreSQL's
//! `$1`, `$2`, … in the order of their parameters; drivers that use `%s`
//! (psycopg, and other DB-API drivers) get the same text from
//! [`with_format_placeholders`].

/// Checks and records a token in one statement: parameters ($1 resource,
/// $2 lock, $3 token as bigint). Returns a row (`highest_token`) only if
/// the token is accepted; holds the fence row's lock until commit, so it
/// must be the fenced transaction's first statement.
pub const UPSERT: &str = "INSERT INTO leasehold_fence (resource, lock, highest_token) \
     VALUES ($1, $2, $3) \
     ON CONFLICT (resource, lock) DO UPDATE \
         SET highest_token = excluded.highest_token, updated_at = now() \
       WHERE leasehold_fence.highest_token <= excluded.highest_token \
     RETURNING highest_token";

/// The highest token accepted for ($1 resource, $2 lock); no row if none.
pub const HIGHEST: &str =
    "SELECT highest_token FROM leasehold_fence WHERE resource = $1 AND lock = $2";

/// One refusal ($1 resource, $2 lock, $3 presented, $4 highest), written
/// after the refused transaction rolled back.
pub const RECORD_REJECTION: &str = "INSERT INTO leasehold_fence_rejections \
     (resource, lock, presented, highest) VALUES ($1, $2, $3, $4)";

/// The most recent refusals, newest first, at most $1 (bigint): rows of
/// (resource, lock, presented, highest, at as Unix ms).
pub const REJECTIONS: &str = "SELECT resource, lock, presented, highest, \
            (extract(epoch FROM at) * 1000)::bigint \
       FROM leasehold_fence_rejections ORDER BY id DESC LIMIT $1";

/// `sql` with `$1`, `$2`, … replaced by `%s` and every literal `%` doubled,
/// for drivers with the DB-API "format" parameter style (psycopg).
///
/// `%s` is positional, so the `$n` must appear once each, in order.
/// Panics otherwise: that is a mistake in one of the constants above
/// (see the test), not something that depends on input.
pub fn with_format_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut next = 1_u32;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '%' => out.push_str("%%"),
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut number = 0_u32;
                while let Some(digit) = chars.peek().and_then(|d| d.to_digit(10)) {
                    number = number * 10 + digit;
                    chars.next();
                }
                assert_eq!(number, next, "placeholders out of order in {sql:?}");
                next += 1;
                out.push_str("%s");
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_converts_to_format_placeholders() {
        let counts = [
            (UPSERT, 3),
            (HIGHEST, 2),
            (RECORD_REJECTION, 4),
            (REJECTIONS, 1),
        ];
        for (sql, params) in counts {
            let converted = with_format_placeholders(sql);
            assert_eq!(converted.matches("%s").count(), params, "{converted}");
            assert!(!converted.contains('$'), "{converted}");
        }
        assert_eq!(
            with_format_placeholders("SELECT '5%' WHERE a = $1 AND b = $2"),
            "SELECT '5%%' WHERE a = %s AND b = %s"
        );
    }

    #[test]
    #[should_panic(expected = "placeholders out of order")]
    fn placeholders_out_of_order_are_a_bug() {
        with_format_placeholders("SELECT $2, $1");
    }
}
