-- Schema 2 of the SQLite ledger, written over schema 1 (0001_ledger.sql, the
-- first migration of every ledger, so a new ledger takes the same steps as
-- an old one). Items are found by (group, url_key) — an integer key of the
-- URL — and attempts are recorded per request: one row names every item the
-- request carried. The rows of schema 1 are copied by `upgrade_to_2`
-- between the two halves of this file. The groups' kept counts are no
-- longer kept by triggers (a trigger runs per row): each statement that
-- moves items between states counts what it moved (`counted`).

DROP TRIGGER items_uncounted;
DROP TRIGGER items_recounted;
DROP INDEX items_group;
DROP INDEX items_reservation;
DROP INDEX attempts_item;
DROP INDEX attempts_at;
DROP INDEX attempts_rejected;
ALTER TABLE items RENAME TO items_v1;
ALTER TABLE attempts RENAME TO attempts_v1;
ALTER TABLE responses RENAME TO responses_v1;

CREATE TABLE items (
    id                 INTEGER PRIMARY KEY,
    group_id           INTEGER NOT NULL REFERENCES groups (id),
    url_key            INTEGER NOT NULL,
    url                TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN ('queued', 'in_flight', 'accepted', 'parked')),
    action             TEXT NOT NULL DEFAULT 'updated' CHECK (action IN ('updated', 'deleted')),
    lastmod            INTEGER,
    next_attempt_at    INTEGER,
    enqueued_at        INTEGER NOT NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_class         TEXT CHECK (last_class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    streak             INTEGER NOT NULL DEFAULT 0,
    streak_started_at  INTEGER,
    accepted_at        INTEGER,
    parked_fingerprint TEXT,
    reservation_id     INTEGER,
    last_request_id    INTEGER,
    UNIQUE (group_id, url_key)
);

-- One attempt of every item it names: the items' ids, ascending, in
-- `items` (NULL when it names one item, `first_item`).
CREATE TABLE requests (
    id          INTEGER PRIMARY KEY,
    group_id    INTEGER NOT NULL REFERENCES groups (id),
    at          INTEGER NOT NULL,
    class       TEXT NOT NULL CHECK (class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    http_status INTEGER,
    body        TEXT,
    retry_at    INTEGER,
    n           INTEGER NOT NULL CHECK (n > 0),
    first_item  INTEGER NOT NULL,
    last_item   INTEGER NOT NULL,
    items       BLOB
);

-- (upgrade_to_2 copies the rows here)

-- Each `submit` run that ended (the metrics of the last run, the report).
-- Times in milliseconds.
CREATE TABLE submit_runs (
    id         INTEGER PRIMARY KEY,
    host       TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    ended_ms   INTEGER NOT NULL,
    exit_code  INTEGER NOT NULL
);

DROP TABLE attempts_v1;
DROP TABLE responses_v1;
DROP TABLE items_v1;

-- The queue by group and due time, what is in flight by reservation, and
-- what is parked by group: partial indexes, so that an item leaves them
-- once answered (an accepted item, the bulk of a ledger, is in no index but
-- its key's).
CREATE INDEX items_queued ON items (group_id, next_attempt_at) WHERE state = 'queued';
CREATE INDEX items_in_flight ON items (reservation_id) WHERE state = 'in_flight';
CREATE INDEX items_parked ON items (group_id) WHERE state = 'parked';
CREATE INDEX requests_group ON requests (group_id, at);
CREATE INDEX requests_rejected ON requests (group_id, at) WHERE class != 'accepted';
CREATE INDEX requests_at ON requests (at);
