-- Schema 12, over schema 11: a ledger per batch (issue 48; docs/design.md,
-- *A ledger per batch*). The migration fills these tables from the
-- items, then drops the items
-- (`0012_items.sql`); admission and copies write their new items as batch
-- rows and spans. The spans hold the items' state; every write of state is
-- a write of spans (`sqlite/spans.rs`).

-- An admitted batch of one group: the items `first_id` to
-- `first_id + n - 1`, their lastmods and actions where any is not the
-- default (else NULL) as admitted, their URLs' 128-bit hashes sorted with
-- each one's place (`sorted`) and their texts (`texts`). Written once,
-- never updated; the blobs' layout is `ledger/batches.rs`'s. Times are
-- seconds since 1970-01-01 UTC. The lastmods and actions come before the
-- big blobs because a row's columns are one payload, spilled into a chain
-- of overflow pages: a column after `texts` is reached only by reading
-- every page of the chain before it, and `item_changes`' readers want the
-- small blobs alone.
CREATE TABLE batches (
    first_id   INTEGER PRIMARY KEY,
    group_id   INTEGER NOT NULL REFERENCES groups (id),
    n          INTEGER NOT NULL CHECK (n > 0),
    created_at INTEGER NOT NULL,
    lastmods   BLOB,
    actions    BLOB,
    sorted     BLOB NOT NULL,
    texts      BLOB NOT NULL
);

-- An item's lastmod and action where they differ from what its batch row
-- says (a requeue with another action, a new lastmod, `ledger copy`
-- updating an item): the item's current values, read before the batch's.
-- Kept by every write of them (`sqlite/batches.rs`, `set_changes`): a row
-- is written when the values differ from the batch's and deleted when they
-- agree again or the item is dropped, so most items have none.
CREATE TABLE item_changes (
    id      INTEGER PRIMARY KEY,
    lastmod INTEGER,
    action  TEXT NOT NULL CHECK (action = 'updated' OR action = 'deleted')
);

-- The state of the items `first` to `last`, all alike: what schema 11's
-- items held in the columns of the same names. Every item is in one span
-- of its own group; spans never overlap, never reach an id that is no
-- item, and two adjacent spans of one group are never alike. An item whose
-- fate differs from its run's has a span of its own.
CREATE TABLE spans (
    first              INTEGER PRIMARY KEY,
    last               INTEGER NOT NULL CHECK (last >= first),
    group_id           INTEGER NOT NULL,
    state              TEXT NOT NULL
                       CHECK (state = 'queued' OR state = 'in_flight' OR state = 'accepted' OR state = 'parked'),
    next_attempt_at    INTEGER,
    enqueued_at        INTEGER NOT NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_class         TEXT CHECK (last_class = 'accepted' OR last_class = 'quota' OR last_class = 'transient'
                                   OR last_class = 'key_pending' OR last_class = 'misconfigured'),
    streak             INTEGER NOT NULL DEFAULT 0,
    streak_started_at  INTEGER,
    accepted_at        INTEGER,
    parked_fingerprint TEXT,
    last_request_id    INTEGER
);
CREATE INDEX spans_queued ON spans (group_id, next_attempt_at) WHERE state = 'queued';
CREATE INDEX spans_parked ON spans (group_id) WHERE state = 'parked';

-- The sorted runs of a group's hashes, by tier: a run of tier 0 is a
-- batch's own `sorted` blob (`batch`), a run of a higher tier is its pages
-- in `hash_pages`. `FANOUT` runs of a tier are merged into one of the next.
CREATE TABLE hash_runs (
    run      INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL,
    tier     INTEGER NOT NULL CHECK (tier >= 0),
    n        INTEGER NOT NULL CHECK (n > 0),
    batch    INTEGER REFERENCES batches (first_id),
    CHECK ((tier = 0) = (batch IS NOT NULL))
);
CREATE INDEX hash_runs_group ON hash_runs (group_id, tier);

-- A page of a merged run: its first hash (16 bytes, big-endian) and its
-- sorted (hash, id) entries.
CREATE TABLE hash_pages (
    run        INTEGER NOT NULL,
    first_hash BLOB NOT NULL,
    entries    BLOB NOT NULL,
    PRIMARY KEY (run, first_hash)
) WITHOUT ROWID;

