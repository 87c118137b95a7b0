-- A copy's staging tables (`copy.rs`): the source's items, dropped items
-- and requests as they come, a chunk at a time, with what the merge finds
-- or gives each here (`dst`: its id in this ledger; `written`: an item
-- given the source's state; `fresh`: a row this copy inserts). They live
-- in the connection's temporary database, made and dropped in the copy's
-- transaction.

DROP TABLE IF EXISTS temp.copy_items;
DROP TABLE IF EXISTS temp.copy_dropped;
DROP TABLE IF EXISTS temp.copy_requests;

CREATE TEMP TABLE copy_items (
    src                INTEGER PRIMARY KEY,
    grp                INTEGER NOT NULL,
    url_key            INTEGER NOT NULL,
    url                TEXT NOT NULL,
    state              TEXT NOT NULL,
    action             TEXT NOT NULL,
    lastmod            INTEGER,
    next_attempt_at    INTEGER,
    enqueued_at        INTEGER NOT NULL,
    attempts           INTEGER NOT NULL,
    last_class         TEXT,
    streak             INTEGER NOT NULL,
    streak_started_at  INTEGER,
    accepted_at        INTEGER,
    parked_fingerprint TEXT,
    last_request       INTEGER,
    dst                INTEGER,
    written            INTEGER NOT NULL DEFAULT 0,
    fresh              INTEGER NOT NULL DEFAULT 0
);

CREATE TEMP TABLE copy_dropped (
    src        INTEGER PRIMARY KEY,
    grp        INTEGER NOT NULL,
    url_key    INTEGER NOT NULL,
    url        TEXT NOT NULL,
    dropped_at INTEGER NOT NULL,
    dst        INTEGER,
    fresh      INTEGER NOT NULL DEFAULT 0
);

CREATE TEMP TABLE copy_requests (
    src         INTEGER PRIMARY KEY,
    grp         INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    class       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    http_status INTEGER,
    body        TEXT,
    retry_at    INTEGER,
    n           INTEGER NOT NULL,
    first_item  INTEGER NOT NULL,
    last_item   INTEGER NOT NULL,
    items       BLOB,
    dst         INTEGER,
    fresh       INTEGER NOT NULL DEFAULT 0
);
