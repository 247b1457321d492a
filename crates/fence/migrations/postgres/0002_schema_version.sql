-- leasehold-fence, PostgreSQL migration 0002: the schema version of the
-- fence tables, so that an adapter never runs on tables newer than it
-- knows. Tables from migration 0001 alone (schema version 1, the releases
-- before this file) are read as they are and marked version 2; tables of a
-- newer version stop the migration with an error naming both versions,
-- before anything is changed. Idempotent, and serialized with 0001 by the
-- same advisory lock.
BEGIN;
SELECT pg_advisory_xact_lock(7438291065);  -- the same: "leasehold-fence migrations"

-- One row: the schema version of the tables in this schema.
CREATE TABLE IF NOT EXISTS leasehold_fence_schema (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  integer NOT NULL
);

DO $$
DECLARE
    found integer;
BEGIN
    SELECT version INTO found FROM leasehold_fence_schema;
    IF found > 2 THEN
        RAISE EXCEPTION 'the leasehold fence tables are schema version %, newer than this adapter knows (version 2 and older): upgrade leasehold-fence to the release that wrote them; never run an older one on them', found
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    INSERT INTO leasehold_fence_schema (version) VALUES (2)
        ON CONFLICT (only_row) DO UPDATE SET version = 2;
END
$$;

COMMENT ON TABLE leasehold_fence_schema IS
    'leasehold-fence: the schema version of the fence tables (one row)';

COMMIT;
