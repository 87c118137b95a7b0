-- Schema 12 of the PostgreSQL ledger, over schema 11: a ledger per batch
-- (issue 48; docs/design.md, *A ledger per batch*), the tables of SQLite's
-- schema 12 in PostgreSQL's dialect. The migration fills these tables
-- from the items, then drops the items (below): the spans are the items' state, written by every
-- write of it (`spans.rs`), a URL is written once, in its batch row, and
-- an item's lastmod and action are its batch row's or `item_changes`'
-- (`batches.rs`, `set_changes`).

-- An admitted batch of one group: the items `first_id` to
-- `first_id + n - 1`, their URLs' 128-bit hashes sorted with each one's
-- place (`sorted`), their texts (`texts`), their lastmods (seconds since
-- 1970-01-01 UTC) and actions where any is not the default (else NULL).
-- Written once, never updated; the blobs' layout is `ledger/batches.rs`'s.
CREATE TABLE batches (
    first_id   bigint PRIMARY KEY,
    group_id   bigint NOT NULL REFERENCES groups (id),
    n          integer NOT NULL CHECK (n > 0),
    created_at timestamptz NOT NULL,
    sorted     bytea NOT NULL,
    texts      bytea NOT NULL,
    lastmods   bytea,
    actions    bytea
);
-- The blobs are stored as they are, out of the row, not compressed: the
-- server would otherwise compress each as the row is inserted, the cost
-- schema 9 removed from the reservations' lists. A blob is written once
-- and read whole.
ALTER TABLE batches ALTER COLUMN sorted SET STORAGE EXTERNAL,
    ALTER COLUMN texts SET STORAGE EXTERNAL,
    ALTER COLUMN lastmods SET STORAGE EXTERNAL,
    ALTER COLUMN actions SET STORAGE EXTERNAL;

-- An item's lastmod and action where they differ from what its batch row
-- says (a requeue with another action, a new lastmod, `ledger copy`
-- updating an item): the item's current values, read before the batch's.
-- Kept by every write of them (`postgres/batches.rs`, `set_changes`): a
-- row is written when the values differ from the batch's and deleted when
-- they agree again or the item is dropped, so most items have none. As
-- SQLite's `item_changes`, its lastmod a time like the items'.
CREATE TABLE item_changes (
    id      bigint PRIMARY KEY,
    lastmod timestamptz,
    action  text NOT NULL CHECK (action IN ('updated', 'deleted'))
);

-- The state of the items `first` to `last` of a group, all alike: what the
-- items' columns of the same names hold today. Spans never overlap; an
-- item whose fate differs from its run's has a span of its own.
CREATE TABLE spans (
    group_id           bigint NOT NULL,
    first              bigint NOT NULL,
    last               bigint NOT NULL CHECK (last >= first),
    state              text NOT NULL CHECK (state IN ('queued', 'in_flight', 'accepted', 'parked')),
    next_attempt_at    timestamptz,
    enqueued_at        timestamptz NOT NULL,
    attempts           integer NOT NULL DEFAULT 0,
    last_class         text CHECK (last_class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    streak             integer NOT NULL DEFAULT 0,
    streak_started_at  timestamptz,
    accepted_at        timestamptz,
    parked_fingerprint text,
    last_request_id    bigint,
    PRIMARY KEY (group_id, first)
);
CREATE INDEX spans_queued ON spans (group_id, next_attempt_at) WHERE state = 'queued';
CREATE INDEX spans_parked ON spans (group_id) WHERE state = 'parked';
-- Spans in flight of their own state (a copy brings items so): rare, and
-- `queue list` reads them without reading the group's other spans.
CREATE INDEX spans_in_flight ON spans (group_id) WHERE state = 'in_flight';

-- The sorted runs of a group's hashes, by tier: a run of tier 0 is a
-- batch's own `sorted` blob (`batch`), a run of a higher tier is its pages
-- in `hash_pages`. `FANOUT` runs of a tier are merged into one of the next.
CREATE TABLE hash_runs (
    run      bigserial PRIMARY KEY,
    group_id bigint NOT NULL,
    tier     integer NOT NULL CHECK (tier >= 0),
    n        bigint NOT NULL CHECK (n > 0),
    batch    bigint REFERENCES batches (first_id),
    CHECK ((tier = 0) = (batch IS NOT NULL))
);
CREATE INDEX hash_runs_group ON hash_runs (group_id, tier);

-- A page of a merged run: its first hash (16 bytes, big-endian, so that
-- `bytea`'s order is the hashes') and its sorted (hash, id) entries,
-- stored as they are for the batches' reason.
CREATE TABLE hash_pages (
    run        bigint NOT NULL,
    first_hash bytea NOT NULL,
    entries    bytea NOT NULL,
    PRIMARY KEY (run, first_hash)
);
ALTER TABLE hash_pages ALTER COLUMN entries SET STORAGE EXTERNAL;

-- (the migration fills the batches and spans from the items here)

-- The items go: a URL lives in its batch row, an item's state in its span,
-- its lastmod and action in its batch row or `item_changes` (issue 48).
-- Their sequence stays, as `item_ids`, for the ids of the items admitted
-- and copied from here on (and of the dropped items a copy brings).
DROP VIEW item_states;
DO $seq$
BEGIN
    EXECUTE format('ALTER SEQUENCE %s RENAME TO item_ids', pg_get_serial_sequence('items', 'id'));
END
$seq$;
ALTER SEQUENCE item_ids OWNED BY NONE;
DROP TABLE items;
DROP FUNCTION count_items();

-- The kept counts by group and state now follow the spans, by their
-- lengths, with schema 1's statement triggers' rule: a statement writes
-- only the counts it changes, in key order. A cut or a merge deletes and
-- inserts spans of one state and length in all, so its two triggers
-- change no count in the end.
CREATE FUNCTION count_spans() RETURNS trigger LANGUAGE plpgsql AS $count$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, sum(last - first + 1) FROM new_spans GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, -sum(last - first + 1) FROM old_spans GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, sum(d) FROM (
            SELECT group_id, state, -(last - first + 1) AS d FROM old_spans
            UNION ALL SELECT group_id, state, last - first + 1 FROM new_spans
        ) AS changes GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END
$count$;
CREATE TRIGGER spans_inserted AFTER INSERT ON spans REFERENCING NEW TABLE AS new_spans
    FOR EACH STATEMENT EXECUTE FUNCTION count_spans();
CREATE TRIGGER spans_updated AFTER UPDATE ON spans REFERENCING OLD TABLE AS old_spans NEW TABLE AS new_spans
    FOR EACH STATEMENT EXECUTE FUNCTION count_spans();
CREATE TRIGGER spans_deleted AFTER DELETE ON spans REFERENCING OLD TABLE AS old_spans
    FOR EACH STATEMENT EXECUTE FUNCTION count_spans();
