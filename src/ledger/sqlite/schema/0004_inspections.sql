-- Schema 4, over schema 3: Google URL inspections (`skip_indexed`), and
-- `queue drop` removes items, not history.

-- Per property and class of answer: how many inspections got an answer of
-- that class since the ledger began (the metrics' counter), and the last of
-- them (`status` shows the latest of the classes other than `accepted` as
-- the last inspection failure).
CREATE TABLE inspections (
    property     TEXT NOT NULL,
    class        TEXT NOT NULL CHECK (class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    count        INTEGER NOT NULL CHECK (count >= 0),
    last_at      INTEGER NOT NULL,
    last_reason  TEXT NOT NULL,
    last_message TEXT NOT NULL,
    last_hint    TEXT,
    last_status  INTEGER,
    PRIMARY KEY (property, class)
);

-- An item that a recorded request names, removed by `queue drop`: its
-- requests stay (the attempt counts never go down), and this row keeps the
-- URL they were about under the item's id — which no other item is given:
-- a new item's id follows the largest of both tables. `url_key` is the
-- URL's key (`url_keys::url_key`), for `log --url`.
CREATE TABLE dropped_items (
    id         INTEGER PRIMARY KEY,
    group_id   INTEGER NOT NULL REFERENCES groups (id),
    url_key    INTEGER NOT NULL,
    url        TEXT NOT NULL,
    dropped_at INTEGER NOT NULL
);
CREATE INDEX dropped_items_url ON dropped_items (group_id, url_key);
