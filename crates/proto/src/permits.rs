//! What an acquire asks of a semaphore or a read-write lock, between the
//! core's [`PermitAsk`] and the wire's `leasehold.v1.PermitAsk`: one
//! conversion each way, used by the client (sending) and the server
//! (reading).

use crate::v1::{permit_ask, PermitAsk as WireAsk, SemaphoreAsk};
use leasehold_core::PermitAsk;

impl From<PermitAsk> for WireAsk {
    fn from(ask: PermitAsk) -> WireAsk {
        let ask = match ask {
            PermitAsk::Semaphore { permits, count } => {
                permit_ask::Ask::Semaphore(SemaphoreAsk { permits, count })
            }
            PermitAsk::Shared => permit_ask::Ask::Shared(true),
            PermitAsk::Exclusive => permit_ask::Ask::Exclusive(true),
        };
        WireAsk { ask: Some(ask) }
    }
}

impl TryFrom<WireAsk> for PermitAsk {
    /// What is wrong with the message, as a sentence about its field.
    type Error = &'static str;

    fn try_from(wire: WireAsk) -> Result<PermitAsk, Self::Error> {
        match wire.ask {
            Some(permit_ask::Ask::Semaphore(SemaphoreAsk { permits, count })) => {
                Ok(PermitAsk::Semaphore { permits, count })
            }
            Some(permit_ask::Ask::Shared(true)) => Ok(PermitAsk::Shared),
            Some(permit_ask::Ask::Exclusive(true)) => Ok(PermitAsk::Exclusive),
            Some(permit_ask::Ask::Shared(false) | permit_ask::Ask::Exclusive(false)) | None => {
                Err("names no ask: set semaphore, shared = true or exclusive = true")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ask_goes_over_the_wire_and_back() {
        let asks = [
            PermitAsk::Semaphore {
                permits: 5,
                count: 2,
            },
            PermitAsk::Shared,
            PermitAsk::Exclusive,
        ];
        for ask in asks {
            assert_eq!(PermitAsk::try_from(WireAsk::from(ask)), Ok(ask));
        }
        assert!(PermitAsk::try_from(WireAsk { ask: None }).is_err());
        let unset = WireAsk {
            ask: Some(permit_ask::Ask::Shared(false)),
        };
        assert!(PermitAsk::try_from(unset).is_err());
    }
}
