//! [`RunningMax`]: "the highest value among the operations that happened
//! before `t`" in O(log n), so that every rule runs in O(n log n) over a
//! history of millions of operations instead of comparing every pair.

/// Values keyed by a time, sorted, with the maximum so far.
pub(crate) struct RunningMax<T> {
    times: Vec<u64>,
    max: Vec<T>,
}

impl<T: Ord + Copy> RunningMax<T> {
    /// Indexes `items` (`(time, value)`, any order).
    pub(crate) fn new(items: impl IntoIterator<Item = (u64, T)>) -> RunningMax<T> {
        let mut items: Vec<(u64, T)> = items.into_iter().collect();
        items.sort_by_key(|(time, _)| *time);
        let mut max: Vec<T> = Vec::with_capacity(items.len());
        for (_, value) in &items {
            let next = max.last().map_or(*value, |m| (*m).max(*value));
            max.push(next);
        }
        RunningMax {
            times: items.into_iter().map(|(time, _)| time).collect(),
            max,
        }
    }

    /// The highest value among the items whose time is before `t`.
    pub(crate) fn before(&self, t: u64) -> Option<T> {
        let n = self.times.partition_point(|time| *time < t);
        n.checked_sub(1).map(|i| self.max[i])
    }
}

#[cfg(test)]
mod tests {
    use super::RunningMax;

    #[test]
    fn the_highest_value_strictly_before_a_time() {
        let index = RunningMax::new([(30, 5), (10, 7), (20, 1)]);
        assert_eq!(index.before(10), None);
        assert_eq!(index.before(11), Some(7));
        assert_eq!(index.before(31), Some(7));
        let index = RunningMax::new([(10, 1), (20, 9)]);
        assert_eq!(index.before(20), Some(1));
        assert_eq!(index.before(21), Some(9));
    }
}
