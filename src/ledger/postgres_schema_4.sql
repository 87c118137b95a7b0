-- Schema 4, over schema 3: `queue drop` removes items, not history.

-- An item that a recorded request names, removed by `queue drop`: its
-- requests stay (the attempt counts never go down), and this row keeps the
-- URL they were about under the item's id (from the items' sequence, so
-- never another item's). `url_key` is the URL's key (`ids::url_key`), for
-- `log --url`.
CREATE TABLE dropped_items (
    id         bigint PRIMARY KEY,
    group_id   bigint NOT NULL REFERENCES groups (id),
    url_key    bigint NOT NULL,
    url        text NOT NULL,
    dropped_at timestamptz NOT NULL
);
CREATE INDEX dropped_items_url ON dropped_items (group_id, url_key);
