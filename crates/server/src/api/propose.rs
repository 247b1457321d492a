//! Typed proposals. Each operation's constructor pairs its core command with
//! the one reply that command has, so a handler gets its own reply type
//! ([`Granted`], [`Acquisition`], …) and can never be handed another
//! command's. The core's [`Reply`] enum is unpacked here, once per command.
//!
//! Only one path gives a command another command's reply: a request id the
//! client reused for a different operation of the same lease (the core
//! replays the first outcome remembered under that id). That is the
//! client's error, answered as an invalid `request_id`, never a panic.

use super::{ApiError, Node};
use leasehold_core::auth::{AuthChange, Principal};
use leasehold_core::{
    Acquire, AcquirePermits, Command, FencedKey, ForceRelease, LeaseId, LockError, LockName,
    OwnerInfo, Reply, RequestId, Revision, Token,
};

/// A command and the reply it has.
#[derive(Debug)]
pub struct Proposal<R> {
    command: Command,
    /// The command's own reply out of the core's enum; any other back.
    reply: fn(Reply) -> Result<R, Reply>,
}

/// A lease was granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    /// The new lease.
    pub lease: LeaseId,
    /// Its ttl.
    pub ttl_ms: u64,
}

/// A keep-alive was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptAlive {
    /// The renewed lease.
    pub lease: LeaseId,
    /// Its ttl, from now.
    pub ttl_ms: u64,
}

/// A lease was revoked; these locks were released by it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revoked {
    /// The locks the lease held.
    pub released: Vec<LockName>,
}

/// What an acquire got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquisition {
    /// The lease holds the lock under `token` (`already_held`: it did before).
    Held { token: Token, already_held: bool },
    /// The lease is queued; the grant arrives later through the waiters.
    Queued,
}

/// A waiter left the queue; if the lease holds the lock by now (granted
/// before the cancel applied), its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitEnded {
    /// The lease's token if the grant won the race.
    pub holder_token: Option<Token>,
}

/// A force release applied: `lease` held the lock; `released` lists every
/// lock freed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForceReleased {
    /// The lease that held the lock.
    pub lease: LeaseId,
    /// Every lock freed.
    pub released: Vec<LockName>,
    /// The whole lease was revoked.
    pub lease_revoked: bool,
}

impl<R> Proposal<R> {
    /// The command to propose.
    pub fn command(&self) -> &Command {
        &self.command
    }

    /// The same proposal, made on `principal`'s behalf: apply records the
    /// principal on a granted lease and re-checks its permission.
    pub fn on_behalf_of(self, principal: Principal) -> Self {
        Proposal {
            command: Command::As {
                principal,
                command: Box::new(self.command),
            },
            reply: self.reply,
        }
    }
}

impl Proposal<Granted> {
    /// Grant a lease (validated: ttl and owner).
    pub fn grant(
        ttl_ms: u64,
        owner: OwnerInfo,
        request_id: Option<RequestId>,
    ) -> Result<Self, LockError> {
        let command = Command::GrantLease {
            ttl_ms,
            owner,
            request_id,
        };
        command.validate()?;
        Ok(Proposal {
            command,
            reply: |reply| match reply {
                Reply::LeaseGranted { lease, ttl_ms } => Ok(Granted { lease, ttl_ms }),
                other => Err(other),
            },
        })
    }
}

impl Proposal<KeptAlive> {
    /// Renew `lease`.
    pub fn keep_alive(lease: LeaseId) -> Self {
        Proposal {
            command: Command::KeepAlive { lease },
            reply: |reply| match reply {
                Reply::KeptAlive { lease, ttl_ms } => Ok(KeptAlive { lease, ttl_ms }),
                other => Err(other),
            },
        }
    }
}

impl Proposal<Revoked> {
    /// Revoke `lease`.
    pub fn revoke(lease: LeaseId, request_id: Option<RequestId>) -> Self {
        Proposal {
            command: Command::RevokeLease { lease, request_id },
            reply: |reply| match reply {
                Reply::LeaseEnded { released } => Ok(Revoked { released }),
                other => Err(other),
            },
        }
    }
}

impl Proposal<Acquisition> {
    /// Acquire a lock or queue for it (`acquire` already validated).
    pub fn acquire(acquire: Acquire) -> Self {
        Proposal {
            command: Command::Acquire(acquire),
            reply: acquisition,
        }
    }

    /// Acquire permits of a semaphore or a read-write lock, or queue for
    /// them (`acquire` already validated); answered as a lock's acquire.
    pub fn acquire_permits(acquire: AcquirePermits) -> Self {
        Proposal {
            command: Command::AcquirePermits(acquire),
            reply: acquisition,
        }
    }
}

/// The reply of an acquire, of a lock or of permits.
fn acquisition(reply: Reply) -> Result<Acquisition, Reply> {
    match reply {
        Reply::Acquired {
            token,
            already_held,
        } => Ok(Acquisition::Held {
            token,
            already_held,
        }),
        Reply::Queued { .. } => Ok(Acquisition::Queued),
        other => Err(other),
    }
}

impl Proposal<()> {
    /// Release `name` held by (`lease`, `token`).
    pub fn release(
        lease: LeaseId,
        name: LockName,
        token: Token,
        request_id: Option<RequestId>,
    ) -> Self {
        Proposal {
            command: Command::Release {
                lease,
                name,
                token,
                request_id,
            },
            reply: |reply| match reply {
                Reply::Released => Ok(()),
                other => Err(other),
            },
        }
    }
}

/// What an acquire of several locks at once got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetAcquisition {
    /// The lease holds every lock, under these tokens (in the asked order).
    Held {
        tokens: Vec<Token>,
        already_held: bool,
    },
    /// The lease waits for all of them.
    Queued,
}

impl Proposal<SetAcquisition> {
    /// Acquire every lock of a set, or queue for all (`acquire` already
    /// validated).
    pub fn acquire_all(acquire: leasehold_core::AcquireAll) -> Self {
        Proposal {
            command: Command::AcquireAll(acquire),
            reply: |reply| match reply {
                Reply::AcquiredAll {
                    tokens,
                    already_held,
                } => Ok(SetAcquisition::Held {
                    tokens,
                    already_held,
                }),
                Reply::Queued { .. } => Ok(SetAcquisition::Queued),
                other => Err(other),
            },
        }
    }
}

impl Proposal<Token> {
    /// The leader of `proclaim.name` (holding it under `proclaim.token`)
    /// sets its election value (`proclaim` already validated).
    pub fn proclaim(proclaim: leasehold_core::Proclaim) -> Self {
        Proposal {
            command: Command::Proclaim(proclaim),
            reply: |reply| match reply {
                Reply::Proclaimed { token } => Ok(token),
                other => Err(other),
            },
        }
    }
}

impl Proposal<WaitEnded> {
    /// Take `lease` out of `name`'s queue (`timed_out`: its wait ran out).
    pub fn cancel_wait(lease: LeaseId, name: LockName, timed_out: bool) -> Self {
        Proposal {
            command: Command::CancelWait {
                lease,
                name,
                timed_out,
            },
            reply: |reply| match reply {
                Reply::WaitEnded { holder_token } => Ok(WaitEnded { holder_token }),
                other => Err(other),
            },
        }
    }
}

impl Proposal<Token> {
    /// Write `value` under `key` as the holder of `lock` with `token`
    /// (validated: the value's size); the reply is the token it was
    /// stored under.
    pub fn fenced_put(
        lock: LockName,
        token: Token,
        key: FencedKey,
        value: Vec<u8>,
        request_id: Option<RequestId>,
    ) -> Result<Self, LockError> {
        let command = Command::FencedPut {
            lock,
            token,
            key,
            value,
            request_id,
        };
        command.validate()?;
        Ok(Proposal {
            command,
            reply: |reply| match reply {
                Reply::FencedStored { token } => Ok(token),
                other => Err(other),
            },
        })
    }
}

impl Proposal<ForceReleased> {
    /// Free a lock from its holder (validated: reason and caller).
    pub fn force_release(force: ForceRelease) -> Result<Self, LockError> {
        let command = Command::from(force);
        command.validate()?;
        Ok(Proposal {
            command,
            reply: |reply| match reply {
                Reply::ForceReleased {
                    lease,
                    released,
                    lease_revoked,
                } => Ok(ForceReleased {
                    lease,
                    released,
                    lease_revoked,
                }),
                other => Err(other),
            },
        })
    }
}

impl Proposal<()> {
    /// Change the auth tables (validated: sizes and shapes).
    pub fn auth(change: AuthChange) -> Result<Self, LockError> {
        let command = Command::Auth(change);
        command.validate()?;
        Ok(Proposal {
            command,
            reply: |reply| match reply {
                Reply::AuthChanged => Ok(()),
                other => Err(other),
            },
        })
    }
}

impl Node {
    /// Proposes `proposal`'s command and returns its reply with the
    /// revision after it: the only way handlers write.
    pub async fn propose<R>(&self, proposal: Proposal<R>) -> Result<(R, Revision), ApiError> {
        let Proposal { command, reply } = proposal;
        let applied = self.proposer.propose(command).await?;
        match reply(applied.outcome?) {
            Ok(reply) => Ok((reply, applied.revision)),
            Err(first) => Err(reused_request_id(&first)),
        }
    }
}

/// The core replayed another operation's outcome: the client reused a
/// request id of this lease for a different operation.
fn reused_request_id(first: &Reply) -> ApiError {
    tracing::warn!(?first, "a request id was reused for another operation");
    ApiError::invalid(
        "request_id",
        "was already used for another operation of this lease: a retry must repeat the same \
         operation; send a new request id for each operation",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_proposal_takes_only_its_own_reply() {
        let name = LockName::parse("a").unwrap();
        let release = Proposal::release(LeaseId(1), name.clone(), Token(2), None);
        let acquired = Reply::Acquired {
            token: Token(2),
            already_held: false,
        };
        assert_eq!((release.reply)(acquired.clone()), Err(acquired.clone()));
        assert_eq!((release.reply)(Reply::Released), Ok(()));
        let cancel = Proposal::cancel_wait(LeaseId(1), name, true);
        assert_eq!((cancel.reply)(acquired.clone()), Err(acquired));
        let ended = Reply::WaitEnded {
            holder_token: Some(Token(4)),
        };
        let expected = WaitEnded {
            holder_token: Some(Token(4)),
        };
        assert_eq!((cancel.reply)(ended), Ok(expected));
    }

    #[test]
    fn constructors_validate_what_the_command_validates() {
        let too_short = Proposal::grant(0, OwnerInfo::default(), None).unwrap_err();
        assert!(too_short.to_string().contains("TTL_MS_MIN"), "{too_short}");
    }
}
