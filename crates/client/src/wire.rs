//! The wire messages the one-shot API hands back as they came: the rich read
//! views (a lock with its holder, owner and queue; a lease; the cluster's
//! status and members; events; the incident record). They are the protocol's
//! own descriptions, so a caller shows exactly what the server said, field
//! for field, without the client translating (and possibly dropping) any of
//! it. Re-exported here so a caller needs no dependency on the generated
//! protocol crate.

pub use leasehold_proto::json::{event_json, leader_change_json, owner_json};
pub use leasehold_proto::v1::{
    AuditRecord, AuthChangeResponse, AuthStatusResponse, BackupInfo, CreateTokenResponse,
    EndedHold, Event, FailedRelease, ForceReleaseRecord, GetLockResponse, HeldLock, Holder,
    IncidentsResponse, Leader, LeaderChange, LeaseInfo, ListLocksResponse, ListRolesResponse,
    ListTokensResponse, ListUsersResponse, LockInfo, LockKind, Member, MembershipResponse,
    OwnerInfo, ResponseHeader, RoleInfo, RoleRule, StatusResponse, TokenInfo, UserInfo, Waiter,
};
