-- Schema 4, over schema 3: `queue drop` removes items, not history.

-- An item that a recorded request names, removed by `queue drop`: its
-- requests stay (the attempt counts never go down), and this row keeps the
-- URL they were about under the item's id — which no other item is given:
-- a new item's id follows the largest of both tables. `url_key` is the
-- URL's key (`ids::url_key`), for `log --url`.
CREATE TABLE dropped_items (
    id         INTEGER PRIMARY KEY,
    group_id   INTEGER NOT NULL REFERENCES groups (id),
    url_key    INTEGER NOT NULL,
    url        TEXT NOT NULL,
    dropped_at INTEGER NOT NULL
);
CREATE INDEX dropped_items_url ON dropped_items (group_id, url_key);
