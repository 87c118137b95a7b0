-- Schema 2 of the PostgreSQL ledger, over schema 1: items are found by
-- (group, url_key) — an integer key of the URL — and attempts are recorded
-- per request: one row names every item the request carried. The keys are
-- computed in Rust (`upgrade_to_2`, between the two halves of this file);
-- the attempts are copied into requests by the second half.

DROP INDEX items_group;
ALTER TABLE items DROP CONSTRAINT items_url_group_id_key;
ALTER TABLE items ADD COLUMN url_key bigint, ADD COLUMN last_request_id bigint;

CREATE TABLE requests (
    id          bigserial PRIMARY KEY,
    group_id    bigint NOT NULL REFERENCES groups (id),
    at          timestamptz NOT NULL,
    class       text NOT NULL CHECK (class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    reason      text NOT NULL,
    message     text NOT NULL,
    http_status integer,
    body        text,
    retry_at    timestamptz,
    n           integer NOT NULL CHECK (n > 0),
    first_item  bigint NOT NULL,
    last_item   bigint NOT NULL,
    -- The items' ids, ascending (`item_ids::encode`); NULL when it names one, `first_item`.
    items       bytea
);

-- (upgrade_to_2 fills the URL keys here)

-- Each attempt of schema 1 becomes a request naming its one item, and each
-- item points at its last.
INSERT INTO requests (group_id, at, class, reason, message, http_status, body, retry_at, n, first_item,
    last_item)
SELECT i.group_id, a.at, a.class, a.reason, a.message, r.http_status, r.body, a.retry_at, 1, a.item_id, a.item_id
FROM attempts a JOIN items i ON i.id = a.item_id LEFT JOIN responses r ON r.id = a.response_id
ORDER BY a.at, a.id;
UPDATE items SET last_request_id = last.id
FROM (SELECT DISTINCT ON (first_item) first_item, id FROM requests ORDER BY first_item, at DESC, id DESC) AS last
WHERE items.id = last.first_item;
DROP TABLE attempts;
DROP TABLE responses;
ALTER TABLE items ALTER COLUMN url_key SET NOT NULL,
    DROP COLUMN last_reason, DROP COLUMN last_message, DROP COLUMN last_http_status,
    ADD CONSTRAINT items_state_known CHECK (state IN ('queued', 'in_flight', 'accepted', 'parked')),
    ADD CONSTRAINT items_action_known CHECK (action IN ('updated', 'deleted')),
    ADD CONSTRAINT items_class_known
        CHECK (last_class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    ADD CONSTRAINT items_key UNIQUE (group_id, url_key);
-- The queue by group and due time, what is in flight by reservation, and
-- what is parked by group: partial indexes, so that an item leaves them
-- once answered (an accepted item, the bulk of a ledger, is in no index but
-- its key's and its id's).
DROP INDEX items_reservation;
CREATE INDEX items_queued ON items (group_id, next_attempt_at, id) WHERE state = 'queued';
CREATE INDEX items_in_flight ON items (reservation_id) WHERE state = 'in_flight';
CREATE INDEX items_parked ON items (group_id) WHERE state = 'parked';
CREATE INDEX requests_group ON requests (group_id, at, id);
CREATE INDEX requests_rejected ON requests (group_id, at, id) WHERE class <> 'accepted';
CREATE INDEX requests_at ON requests (at, id);

-- Each `submit` run that ended, on any machine (the metrics of the last
-- run, the report).
CREATE TABLE submit_runs (
    id         bigserial PRIMARY KEY,
    host       text NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz NOT NULL,
    exit_code  integer NOT NULL
);
