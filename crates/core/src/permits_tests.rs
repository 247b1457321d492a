use super::*;

fn lease(id: u64) -> LeaseId {
    LeaseId(id)
}

/// An unfenced ask of `lease` for `count` permits, waiting up to `wait_ms`.
fn asking(lease: u64, count: u32, wait_ms: u64) -> Ask {
    Ask {
        lease: LeaseId(lease),
        count,
        wait_ms,
        fenced: false,
    }
}

/// How long an ask that waits waits.
const WAIT: u64 = 60_000;

/// The stamp of the command with revision `token`.
fn at(token: u64) -> Stamp {
    Stamp {
        token: Token(token),
        at_unix_ms: 1_000 * token,
    }
}

fn granted(token: u64) -> Asked {
    Asked::Granted {
        token: Token(token),
        already_held: false,
    }
}

fn leases(holds: &[PermitHold]) -> Vec<u64> {
    holds.iter().map(|h| h.lease.0).collect()
}

#[test]
fn a_semaphore_grants_until_full_then_queues_or_refuses() {
    let mut pool = PermitPool::new(3).unwrap();
    assert_eq!(pool.ask(asking(1, 2, 0), at(10)), Ok(granted(10)));
    assert_eq!(pool.ask(asking(2, 1, 0), at(11)), Ok(granted(11)));
    assert_eq!(
        pool.ask(asking(3, 1, 0), at(12)),
        Err(PermitRefusal::Busy {
            count: 1,
            free: 0,
            permits: 3,
            waiting: 0
        })
    );
    let queued = pool.ask(asking(3, 1, WAIT), at(12));
    assert_eq!(queued, Ok(Asked::Queued { position: 1 }));
    assert_eq!(pool.release(lease(2), Token(11)).map(|h| h.count), Ok(1));
    let grants = pool.grant_waiting(at(13));
    assert_eq!(leases(&grants), [3]);
    assert_eq!(
        grants[0].token,
        Token(13),
        "granted under the releasing command's token"
    );
    assert_eq!(grants[0].acquired_unix_ms, 13_000);
    assert_eq!((pool.held(), pool.free()), (3, 0));
}

#[test]
fn a_big_ask_is_not_starved_by_later_small_ones() {
    let mut pool = PermitPool::new(4).unwrap();
    pool.ask(asking(1, 3, 0), at(1)).unwrap();
    assert_eq!(
        pool.ask(asking(2, 4, WAIT), at(2)),
        Ok(Asked::Queued { position: 1 })
    );
    // One permit is free, but the head asks for four: the small ask waits.
    assert_eq!(
        pool.ask(asking(3, 1, WAIT), at(3)),
        Ok(Asked::Queued { position: 2 })
    );
    assert!(matches!(
        pool.ask(asking(4, 1, 0), at(4)),
        Err(PermitRefusal::Busy { free: 1, .. })
    ));
    pool.release(lease(1), Token(1)).unwrap();
    assert_eq!(leases(&pool.grant_waiting(at(5))), [2]);
    pool.release(lease(2), Token(5)).unwrap();
    assert_eq!(leases(&pool.grant_waiting(at(6))), [3]);
}

#[test]
fn when_the_head_leaves_the_asks_behind_it_that_fit_are_granted() {
    let mut pool = PermitPool::new(2).unwrap();
    pool.ask(asking(1, 1, 0), at(1)).unwrap();
    pool.ask(asking(2, 2, WAIT), at(2)).unwrap();
    pool.ask(asking(3, 1, WAIT), at(3)).unwrap();
    pool.ask(asking(4, 1, WAIT), at(4)).unwrap();
    assert!(pool.cancel_wait(lease(2)));
    assert!(!pool.cancel_wait(lease(2)), "already gone");
    assert_eq!(leases(&pool.grant_waiting(at(5))), [3]);
    assert_eq!(pool.waiters().len(), 1, "lease 4 waits for lease 1 or 3");
}

#[test]
fn a_read_write_pool_lets_readers_share_and_a_writer_in_alone() {
    let mut rw = PermitPool::read_write();
    let write = rw.exclusive();
    assert_eq!(
        rw.ask(asking(1, PermitPool::SHARED, WAIT), at(1)),
        Ok(granted(1))
    );
    assert_eq!(
        rw.ask(asking(2, PermitPool::SHARED, WAIT), at(2)),
        Ok(granted(2))
    );
    let writer = rw.ask(asking(3, write, WAIT), at(3));
    assert_eq!(writer, Ok(Asked::Queued { position: 1 }));
    // A reader behind a waiting writer waits: no writer starvation.
    let reader = rw.ask(asking(4, PermitPool::SHARED, WAIT), at(4));
    assert_eq!(reader, Ok(Asked::Queued { position: 2 }));
    rw.ask(asking(5, PermitPool::SHARED, WAIT), at(5)).unwrap();
    rw.release(lease(1), Token(1)).unwrap();
    assert!(rw.grant_waiting(at(6)).is_empty(), "a reader still holds");
    rw.release(lease(2), Token(2)).unwrap();
    let grants = rw.grant_waiting(at(7));
    assert_eq!(leases(&grants), [3]);
    assert!(
        grants[0].token > Token(2),
        "the writer's token is above every earlier holder's"
    );
    assert_eq!(leases(rw.holds()), [3], "the writer holds alone");
    rw.release(lease(3), Token(7)).unwrap();
    let readers = rw.grant_waiting(at(8));
    assert_eq!(
        leases(&readers),
        [4, 5],
        "consecutive readers are granted together"
    );
    assert!(readers.iter().all(|h| h.token == Token(8)));
}

#[test]
fn a_lease_has_one_grant_and_a_retry_finds_it() {
    let mut pool = PermitPool::new(2).unwrap();
    pool.ask(asking(1, 2, 0), at(1)).unwrap();
    let again = pool.ask(asking(1, 2, 0), at(2));
    let held = Asked::Granted {
        token: Token(1),
        already_held: true,
    };
    assert_eq!(again, Ok(held));
    let other = pool.ask(asking(1, 1, WAIT), at(2));
    let refused = PermitRefusal::OtherCount {
        held: 2,
        count: 1,
        waiting: false,
    };
    assert_eq!(other, Err(refused));
    assert_eq!(
        refused.to_string(),
        "the lease already holds 2 permits: release them (or stop waiting) before asking for 1"
    );
    pool.ask(asking(2, 1, WAIT), at(3)).unwrap();
    let place = pool.ask(asking(2, 1, WAIT), at(4));
    assert_eq!(place, Ok(Asked::Queued { position: 1 }));
    let upgrade = pool.ask(asking(2, 2, WAIT), at(4));
    assert!(matches!(
        upgrade,
        Err(PermitRefusal::OtherCount { waiting: true, .. })
    ));
    assert_eq!(pool.waiters().len(), 1);
}

#[test]
fn a_lease_that_ends_frees_exactly_its_permits() {
    let mut pool = PermitPool::new(5).unwrap();
    pool.ask(asking(1, 2, 0), at(1)).unwrap();
    pool.ask(asking(2, 3, 0), at(2)).unwrap();
    pool.ask(asking(3, 4, WAIT), at(3)).unwrap();
    let left = pool.leave(lease(2));
    assert_eq!((left.0.map(|h| h.count), left.1), (Some(3), false));
    assert_eq!(pool.free(), 3, "lease 1's two stay held");
    assert!(
        pool.grant_waiting(at(4)).is_empty(),
        "four do not fit in three"
    );
    assert_eq!(pool.leave(lease(3)), (None, true));
    assert_eq!(pool.leave(lease(1)).0.map(|h| h.token), Some(Token(1)));
    assert!(pool.is_idle());
}

#[test]
fn bad_counts_and_wrong_releases_are_refused_and_change_nothing() {
    assert_eq!(
        PermitPool::new(0),
        Err(PermitRefusal::PermitsOutOfRange { permits: 0 })
    );
    assert!(PermitPool::new(PERMITS_MAX + 1).is_err());
    let mut pool = PermitPool::new(2).unwrap();
    for count in [0, 3] {
        let refused = pool.ask(asking(1, count, WAIT), at(1));
        assert_eq!(
            refused,
            Err(PermitRefusal::CountOutOfRange { count, permits: 2 })
        );
    }
    pool.ask(asking(1, 1, 0), at(1)).unwrap();
    let before = pool.clone();
    let wrong_token = pool.release(lease(1), Token(2));
    assert_eq!(
        wrong_token,
        Err(PermitRefusal::NotHolder {
            lease: lease(1),
            token: Token(2)
        })
    );
    assert!(
        pool.release(lease(2), Token(1)).is_err(),
        "another lease's token"
    );
    assert_eq!(pool, before);
}

#[test]
#[should_panic(expected = "a grant's token went back")]
fn a_token_that_goes_back_is_a_bug() {
    let mut pool = PermitPool::new(2).unwrap();
    pool.ask(asking(1, 1, 0), at(5)).unwrap();
    let _ = pool.ask(asking(2, 1, 0), at(4));
}

#[test]
fn a_pool_round_trips_through_its_encoding() {
    let mut pool = PermitPool::new(3).unwrap();
    pool.ask(asking(1, 3, 0), at(1)).unwrap();
    pool.ask(asking(2, 2, WAIT), at(2)).unwrap();
    let bytes = postcard::to_allocvec(&pool).unwrap();
    assert_eq!(postcard::from_bytes::<PermitPool>(&bytes).unwrap(), pool);
}
