//! Suggestions for a `NoSuchLock` error: existing lock names that look like
//! the one asked for. A release sent to a slightly wrong key is a classic
//! incident; naming the near miss turns it into a one-line fix.
//!
//! This runs inside `apply`, so its cost is bounded however large the lock
//! table and however long the names: it looks only at a bounded set of
//! candidates (the whole table when small, else names sharing the first path
//! segment plus the neighbours in name order) and stops when a budget of
//! edit-distance cells is spent. The result is deterministic, like all of
//! `apply`.
//!
//! A `Get` of a missing name runs it under the state's read lock, which
//! holds off the next apply: with a million names it cost 1.6 ms a call and
//! a sixth of the server's time while a benchmark polled freed locks
//! through an expiry storm. The distance is now computed only in the band
//! of cells within the bound of the diagonal, in rows kept between
//! candidates, over 256 same-segment names instead of 1,024: 0.25 ms a call
//! (docs/DESIGN.md §6d, "Expiry storms").

use crate::{limits, LockName};
use imbl::OrdMap;
use std::cmp::Reverse;
use std::ops::Bound;

/// Tables up to this size are scanned whole.
const SCAN_ALL_MAX: usize = 1_024;
/// Otherwise: at most this many names sharing the first path segment...
const SAME_SEGMENT_MAX: usize = 256;
/// ...plus this many names on either side of the asked-for name.
const NEIGHBOURS_MAX: usize = 64;
/// Edit-distance table cells computed per suggestion, at most.
const CELLS_BUDGET: usize = 2_000_000;

/// Whether `name` looks like `wanted` (a different name): the same leaf
/// under another prefix or hash tag (`prod/jobs/nightly` vs `jobs/nightly`,
/// `{billing}:run` vs `{payments}:run`), or an edit distance (with
/// transpositions) of at most max(3, len/4). `diagnose` uses this to pair a
/// release that named a missing lock with the lock the caller holds.
pub fn looks_alike(wanted: &str, name: &str) -> bool {
    if wanted == name {
        return false;
    }
    if same_leaf(wanted, name) {
        return true;
    }
    let wanted_chars: Vec<char> = wanted.chars().collect();
    let chars: Vec<char> = name.chars().collect();
    let bound = (wanted_chars.len() / 4).max(3);
    chars.len().abs_diff(wanted_chars.len()) <= bound
        && bounded_distance(&wanted_chars, &chars, bound).is_some()
}

/// The last part of a name: after its last `/`, `:` or `}`.
fn leaf(name: &str) -> &str {
    name.rfind(['/', ':', '}'])
        .map_or(name, |at| &name[at + 1..])
}

/// Both names end with the same non-empty leaf under different prefixes.
fn same_leaf(a: &str, b: &str) -> bool {
    a != b && !leaf(a).is_empty() && leaf(a) != a && leaf(a) == leaf(b)
}

/// Up to [`limits::NEARBY_NAMES_MAX`] names from `table` most similar to
/// `wanted`: smallest edit distance (with transpositions) first, ties broken
/// by longest common prefix, then name order. A name qualifies if its
/// distance is at most max(3, len/4), it has the same parent path, or it
/// has the same leaf under another prefix or hash tag (ranked after the
/// near spellings).
pub(crate) fn nearby_names<V: Clone>(table: &OrdMap<LockName, V>, wanted: &str) -> Vec<String> {
    let wanted_chars: Vec<char> = wanted.chars().collect();
    let bound = (wanted_chars.len() / 4).max(3);
    let wanted_parent = parent(wanted);
    let mut budget = CELLS_BUDGET;
    let mut rows = Rows::default();
    let mut chars: Vec<char> = Vec::new();
    let mut scored: Vec<(usize, Reverse<usize>, &str)> = Vec::new();
    for name in candidates(table, wanted) {
        let same_parent = wanted_parent.is_some() && parent(name) == wanted_parent;
        let qualifies = same_parent || same_leaf(wanted, name);
        chars.clear();
        chars.extend(name.chars());
        if !qualifies && chars.len().abs_diff(wanted_chars.len()) > bound {
            continue;
        }
        let cells = (chars.len() + 1) * (wanted_chars.len() + 1);
        if cells > budget {
            break;
        }
        budget -= cells;
        let distance = rows.bounded_distance(&wanted_chars, &chars, bound);
        if distance.is_none() && !qualifies {
            continue;
        }
        let common = common_prefix_chars(wanted, name);
        scored.push((distance.unwrap_or(usize::MAX), Reverse(common), name));
    }
    scored.sort_unstable();
    scored
        .into_iter()
        .take(limits::NEARBY_NAMES_MAX)
        .map(|(_, _, name)| name.to_owned())
        .collect()
}

/// The names worth comparing with `wanted`, in name order, each once,
/// without `wanted`.
fn candidates<'a, V: Clone>(table: &'a OrdMap<LockName, V>, wanted: &str) -> Vec<&'a str> {
    let names = |range: (Bound<&str>, Bound<&str>)| {
        table.range::<_, str>(range).map(|(name, _)| name.as_str())
    };
    let mut out = Vec::new();
    if table.len() <= SCAN_ALL_MAX {
        out.extend(table.keys().map(LockName::as_str));
    } else {
        if let Some(slash) = wanted.find('/') {
            let segment = &wanted[..=slash];
            let same = names((Bound::Included(segment), Bound::Unbounded))
                .take_while(|name| name.starts_with(segment))
                .take(SAME_SEGMENT_MAX);
            out.extend(same);
        }
        let before = names((Bound::Unbounded, Bound::Excluded(wanted)));
        out.extend(before.rev().take(NEIGHBOURS_MAX));
        let after = names((Bound::Excluded(wanted), Bound::Unbounded));
        out.extend(after.take(NEIGHBOURS_MAX));
        out.sort_unstable();
        out.dedup();
    }
    out.retain(|name| *name != wanted);
    out
}

/// Everything up to and including the last `/`, if there is one.
fn parent(name: &str) -> Option<&str> {
    name.rfind('/').map(|slash| &name[..=slash])
}

fn common_prefix_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// The three rows of the distance table, kept between candidates so a
/// suggestion allocates them once, not once per name compared.
#[derive(Default)]
struct Rows {
    before_previous: Vec<usize>,
    previous: Vec<usize>,
    current: Vec<usize>,
}

impl Rows {
    /// Optimal-string-alignment distance (Levenshtein plus adjacent
    /// transpositions) between `a` and `b`, or `None` once it must exceed
    /// `bound`. Only the band of cells within `bound` of the diagonal is
    /// computed (a cell further off is at least its offset, so past the
    /// bound); the cells just outside the band read as past it.
    fn bounded_distance(&mut self, a: &[char], b: &[char], bound: usize) -> Option<usize> {
        let n = b.len();
        if a.len().abs_diff(n) > bound {
            return None;
        }
        let past = bound + 1;
        let Rows {
            before_previous,
            previous,
            current,
        } = self;
        before_previous.clear();
        before_previous.resize(n + 1, past);
        previous.clear();
        previous.extend((0..=n).map(|j| j.min(past)));
        current.clear();
        current.resize(n + 1, past);
        let mut previous_min = 0;
        for i in 1..=a.len() {
            let (first, last) = (i.saturating_sub(bound).max(1), (i + bound).min(n));
            current[first - 1] = if first == 1 { i.min(past) } else { past };
            if last < n {
                current[last + 1] = past;
            }
            let mut row_min = current[first - 1];
            for j in first..=last {
                let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
                let mut cell = substitution.min(previous[j] + 1).min(current[j - 1] + 1);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    cell = cell.min(before_previous[j - 2] + 1);
                }
                current[j] = cell.min(past);
                row_min = row_min.min(current[j]);
            }
            // Every cell is at least the minimum of the two rows above it, so
            // two rows past the bound mean the distance is past it too.
            if row_min > bound && previous_min > bound {
                return None;
            }
            previous_min = row_min;
            std::mem::swap(before_previous, previous);
            std::mem::swap(previous, current);
        }
        Some(previous[n]).filter(|&distance| distance <= bound)
    }
}

/// [`Rows::bounded_distance`] with rows of its own.
fn bounded_distance(a: &[char], b: &[char], bound: usize) -> Option<usize> {
    Rows::default().bounded_distance(a, b, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(names: &[&str]) -> OrdMap<LockName, ()> {
        names
            .iter()
            .map(|n| (LockName::parse(n).unwrap(), ()))
            .collect()
    }

    fn distance(a: &str, b: &str) -> Option<usize> {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        bounded_distance(&a, &b, 10)
    }

    #[test]
    fn distance_counts_edits_and_transpositions() {
        assert_eq!(distance("nightly", "nightly"), Some(0));
        assert_eq!(distance("nightly", "nigthly"), Some(1));
        assert_eq!(distance("nightly", "nighty"), Some(1));
        assert_eq!(distance("kitten", "sitting"), Some(3));
        assert_eq!(distance("", "abc"), Some(3));
        assert_eq!(distance("a", &"b".repeat(20)), None);
    }

    /// The whole table, no band, no early exit: what the banded one must agree with.
    fn full_distance(a: &[char], b: &[char]) -> usize {
        let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
        for (i, row) in d.iter_mut().enumerate() {
            row[0] = i;
        }
        d[0] = (0..=b.len()).collect();
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut cell = (d[i - 1][j - 1] + cost)
                    .min(d[i - 1][j] + 1)
                    .min(d[i][j - 1] + 1);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    cell = cell.min(d[i - 2][j - 2] + 1);
                }
                d[i][j] = cell;
            }
        }
        d[a.len()][b.len()]
    }

    proptest::proptest! {
        #[test]
        fn the_banded_distance_agrees_with_the_whole_table(
            a in "[ab/x]{0,12}",
            b in "[ab/x]{0,12}",
            bound in 0usize..6,
        ) {
            let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
            let full = full_distance(&a, &b);
            let mut rows = Rows::default();
            let banded = rows.bounded_distance(&a, &b, bound);
            proptest::prop_assert_eq!(banded, Some(full).filter(|&d| d <= bound));
            // The rows are reused: a second comparison starts clean.
            proptest::prop_assert_eq!(rows.bounded_distance(&b, &a, bound), banded);
        }
    }

    #[test]
    fn transposed_name_suggests_the_real_one_first() {
        let t = table(&[
            "jobs/nightly",
            "jobs/weekly",
            "db/migrate",
            "jobs/nightly-2",
        ]);
        let nearby = nearby_names(&t, "jobs/nigthly");
        assert_eq!(nearby[0], "jobs/nightly");
        assert!(nearby.len() <= limits::NEARBY_NAMES_MAX);
        assert!(!nearby.contains(&"db/migrate".to_owned()));
    }

    #[test]
    fn same_parent_qualifies_even_when_far() {
        let t = table(&["jobs/weekly-report-generation", "other/x"]);
        assert_eq!(
            nearby_names(&t, "jobs/a"),
            vec!["jobs/weekly-report-generation".to_owned()]
        );
    }

    #[test]
    fn same_leaf_under_another_prefix_or_hash_tag_qualifies() {
        let t = table(&["prod/reports/nightly", "{billing}:invoice-run", "x/y"]);
        assert_eq!(
            nearby_names(&t, "reports/nightly"),
            vec!["prod/reports/nightly".to_owned()]
        );
        assert_eq!(
            nearby_names(&t, "{payments-eu}:invoice-run"),
            vec!["{billing}:invoice-run".to_owned()]
        );
        assert!(looks_alike("reports/nightly", "prod/reports/nightly"));
        assert!(looks_alike("{a}:run", "{bbbbbbbb}:run"));
        assert!(looks_alike("jobs/nigthly", "jobs/nightly"));
        assert!(!looks_alike("jobs/nightly", "jobs/nightly"));
        assert!(!looks_alike("jobs/a", "jobs/weekly-report-generation"));
        assert!(!looks_alike("nightly", "payments/ledger"));
    }

    #[test]
    fn unrelated_names_are_not_suggested() {
        let t = table(&["payments/ledger", "db/migrate"]);
        assert!(nearby_names(&t, "jobs/nightly").is_empty());
    }

    #[test]
    fn large_tables_still_find_neighbours_and_same_segment_names() {
        let mut names: Vec<String> = (0..5_000).map(|i| format!("bulk/{i:05}")).collect();
        names.push("jobs/nightly".to_owned());
        let t: OrdMap<LockName, ()> = names
            .iter()
            .map(|n| (LockName::parse(n).unwrap(), ()))
            .collect();
        assert_eq!(nearby_names(&t, "jobs/nigthly")[0], "jobs/nightly");
        assert_eq!(nearby_names(&t, "bulk/04999x")[0], "bulk/04999");
    }
}
