-- leasehold-fence, PostgreSQL migration 0001: the fence table and the
-- rejection audit. Idempotent: safe to apply on every start, and by several
-- processes at once (the advisory lock serializes concurrent appliers, since
-- concurrent `create table if not exists` can still collide in the catalog).
BEGIN;
SELECT pg_advisory_xact_lock(7438291065);  -- arbitrary, fixed: "leasehold-fence migrations"

-- One row per fenced (resource, lock): the highest token accepted so far.
CREATE TABLE IF NOT EXISTS leasehold_fence (
    -- The protected resource, as the application names it (a table, a
    -- tenant, a key space). Lets one lock fence several resources apart.
    resource      text        NOT NULL,
    -- The lock whose fencing token is checked (the Leasehold lock name).
    lock          text        NOT NULL,
    -- The highest token accepted for (resource, lock). Tokens are u64 in
    -- Leasehold; PostgreSQL has no unsigned type, so tokens above
    -- i64::MAX are refused before they reach SQL, and a negative value
    -- can never be stored.
    highest_token bigint      NOT NULL CHECK (highest_token >= 0),
    -- When highest_token was last written (accepted, equal tokens too).
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (resource, lock)
);

-- Every refused (stale) write, so "a lower token followed a higher one" is
-- a query. Written after the refused transaction rolled back.
CREATE TABLE IF NOT EXISTS leasehold_fence_rejections (
    -- Insertion order; the newest refusals have the highest ids.
    id        bigserial   PRIMARY KEY,
    -- The resource the refused write was aimed at.
    resource  text        NOT NULL,
    -- The lock whose token was refused.
    lock      text        NOT NULL,
    -- The token the stale writer presented.
    presented bigint      NOT NULL,
    -- The highest token the resource had accepted at that moment.
    highest   bigint      NOT NULL,
    -- When the refusal was recorded.
    at        timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE leasehold_fence IS
    'leasehold-fence: highest fencing token accepted per (resource, lock)';
COMMENT ON TABLE leasehold_fence_rejections IS
    'leasehold-fence: writes refused for a stale fencing token';

COMMIT;
