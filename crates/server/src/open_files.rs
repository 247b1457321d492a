//! The open-files limit of the processes that hold many connections: a
//! server with thousands of clients, and `bench`, which opens them. Each
//! connection is a file descriptor, and the soft limit many systems start a
//! process with (1,024) would refuse the 1,025th client with `EMFILE`
//! though the hard limit allows far more. So `serve` and `bench` raise
//! their soft limit to the hard one, as Go's runtime and nginx's
//! `worker_rlimit_nofile` do. Other commands keep the limit they were
//! given: `lock` passes it on to the command it runs, which may use
//! `select()` and must not see descriptors above 1,023.

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit; returns
/// the soft limit now in force (`None` if it cannot be read).
pub fn raise_to_hard_limit() -> Option<u64> {
    let mut limit = read()?;
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            ..limit
        };
        // SAFETY: setrlimit reads one rlimit we own; raising the soft
        // limit up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Some(limit.rlim_cur)
}

/// This process's soft open-files limit; `None` if unlimited or unreadable.
pub fn soft_limit() -> Option<u64> {
    read()
        .map(|limit| limit.rlim_cur)
        .filter(|&soft| soft != libc::RLIM_INFINITY)
}

fn read() -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit we own.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_reaches_the_hard_one() {
        let soft = raise_to_hard_limit().expect("readable");
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
            0
        );
        assert_eq!((limit.rlim_cur, soft), (limit.rlim_max, limit.rlim_max));
    }
}
