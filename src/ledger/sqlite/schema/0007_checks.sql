-- Schema 7, over schema 6: the items table again, its columns, keys and
-- indexes unchanged, its CHECK constraints written as comparisons joined by
-- OR. SQLite evaluates a constraint written `col IN ('a', 'b', …)` by
-- building a temporary index of the list for every row a statement writes,
-- a large share of a submit's admission, claim and answer
-- (docs/performance.md, *Measured choices*); a chain of comparisons admits
-- exactly the same values at no such cost. SQLite cannot change a constraint in place, so
-- the table is rebuilt and its rows copied as they are.

CREATE TABLE items_v7 (
    id                 INTEGER PRIMARY KEY,
    group_id           INTEGER NOT NULL REFERENCES groups (id),
    url_key            INTEGER NOT NULL,
    url                TEXT NOT NULL,
    state              TEXT NOT NULL
                       CHECK (state = 'queued' OR state = 'in_flight' OR state = 'accepted' OR state = 'parked'),
    action             TEXT NOT NULL DEFAULT 'updated' CHECK (action = 'updated' OR action = 'deleted'),
    lastmod            INTEGER,
    next_attempt_at    INTEGER,
    enqueued_at        INTEGER NOT NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_class         TEXT CHECK (last_class = 'accepted' OR last_class = 'quota' OR last_class = 'transient'
                                   OR last_class = 'key_pending' OR last_class = 'misconfigured'),
    streak             INTEGER NOT NULL DEFAULT 0,
    streak_started_at  INTEGER,
    accepted_at        INTEGER,
    parked_fingerprint TEXT,
    reservation_id     INTEGER,
    last_request_id    INTEGER,
    UNIQUE (group_id, url_key)
);

INSERT INTO items_v7 (id, group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at, attempts,
        last_class, streak, streak_started_at, accepted_at, parked_fingerprint, reservation_id, last_request_id)
    SELECT id, group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at, attempts,
        last_class, streak, streak_started_at, accepted_at, parked_fingerprint, reservation_id, last_request_id
    FROM items ORDER BY id;

DROP TABLE items;
ALTER TABLE items_v7 RENAME TO items;

-- The same indexes as schema 2's (dropped with the table).
CREATE INDEX items_queued ON items (group_id, next_attempt_at) WHERE state = 'queued';
CREATE INDEX items_in_flight ON items (reservation_id) WHERE state = 'in_flight';
CREATE INDEX items_parked ON items (group_id) WHERE state = 'parked';
