-- Schema 12, its second step (`sqlite/schema.rs` runs it after filling the
-- spans from the items, in the same transaction): the items keep their
-- identity and content (id, group, URL key, URL, action, lastmod); their
-- state is the spans' alone, so its columns, and the indexes on them, go.
-- SQLite cannot drop an indexed or checked column in place, so the table is
-- rebuilt and its rows copied as they are (schema 7's way). The views over
-- the items are dropped first and made again over the new table.

DROP VIEW item_states;

CREATE TABLE items_v12 (
    id       INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL REFERENCES groups (id),
    url_key  INTEGER NOT NULL,
    url      TEXT NOT NULL,
    action   TEXT NOT NULL DEFAULT 'updated' CHECK (action = 'updated' OR action = 'deleted'),
    lastmod  INTEGER,
    UNIQUE (group_id, url_key)
);

INSERT INTO items_v12 (id, group_id, url_key, url, action, lastmod)
    SELECT id, group_id, url_key, url, action, lastmod FROM items ORDER BY id;

DROP TABLE items;
ALTER TABLE items_v12 RENAME TO items;

-- The items with their state, each joined to the span holding it: what
-- the items' rows held before the spans did, for the readers that want a
-- row an item (`ledger copy`, `queue retry` and `queue drop`'s filters,
-- the tests' oracles). A span is found by one seek on its key.
CREATE VIEW item_rows AS
SELECT i.id, i.group_id, i.url_key, i.url, s.state, i.action, i.lastmod, s.next_attempt_at, s.enqueued_at,
       s.attempts, s.last_class, s.streak, s.streak_started_at, s.accepted_at, s.parked_fingerprint,
       s.last_request_id
FROM items i JOIN spans s ON s.first = (SELECT max(first) FROM spans WHERE first <= i.id) AND s.last >= i.id;

-- Schema 9's view of the items with their state, a queued item a run of
-- `in_flight` holds shown in flight, now over `item_rows`.
CREATE VIEW item_states AS
SELECT i.id, i.group_id, i.url_key, i.url,
       CASE WHEN (SELECT f.last FROM in_flight f WHERE f.first <= i.id ORDER BY f.first DESC LIMIT 1) >= i.id
            THEN 'in_flight' ELSE i.state END AS state,
       i.action, i.lastmod, i.next_attempt_at, i.enqueued_at, i.attempts, i.last_class, i.streak,
       i.streak_started_at, i.accepted_at, i.parked_fingerprint, i.last_request_id
FROM item_rows i;
