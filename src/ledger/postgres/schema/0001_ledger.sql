-- Schema 1 of the PostgreSQL ledger: the first migration of every ledger
-- (a new ledger takes the same steps as an old one). Schema 2 rewrites its
-- items and attempts.
CREATE TABLE groups (
    id       bigserial PRIMARY KEY,
    property text NOT NULL,
    engine   text NOT NULL,
    target   text NOT NULL,
    UNIQUE (property, engine, target)
);

CREATE TABLE items (
    id                 bigserial PRIMARY KEY,
    url                text NOT NULL,
    group_id           bigint NOT NULL REFERENCES groups (id),
    state              text NOT NULL,
    action             text NOT NULL DEFAULT 'updated',
    lastmod            timestamptz,
    next_attempt_at    timestamptz,
    enqueued_at        timestamptz NOT NULL,
    attempts           integer NOT NULL DEFAULT 0,
    last_class         text,
    last_reason        text,
    last_message       text,
    last_http_status   integer,
    streak             integer NOT NULL DEFAULT 0,
    streak_started_at  timestamptz,
    accepted_at        timestamptz,
    parked_fingerprint text,
    reservation_id     bigint,
    UNIQUE (url, group_id)
);
CREATE INDEX items_group ON items (group_id, state, next_attempt_at, id);
CREATE INDEX items_reservation ON items (reservation_id) WHERE reservation_id IS NOT NULL;

-- Items by group and state, kept by statement triggers (counting a queue of a
-- million would read all of it). One row per group and state; a statement
-- writes only the rows whose count it changes, in key order (so that
-- transactions touching several wait for each other, never deadlock).
CREATE TABLE group_counts (
    group_id bigint NOT NULL REFERENCES groups (id),
    state    text NOT NULL,
    n        bigint NOT NULL,
    PRIMARY KEY (group_id, state)
);
CREATE FUNCTION count_items() RETURNS trigger LANGUAGE plpgsql AS $count$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, count(*) FROM new_items GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, -count(*) FROM old_items GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, sum(d) FROM (
            SELECT group_id, state, -1 AS d FROM old_items
            UNION ALL SELECT group_id, state, 1 FROM new_items
        ) AS changes GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END
$count$;
CREATE TRIGGER items_inserted AFTER INSERT ON items REFERENCING NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION count_items();
CREATE TRIGGER items_updated AFTER UPDATE ON items REFERENCING OLD TABLE AS old_items NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION count_items();
CREATE TRIGGER items_deleted AFTER DELETE ON items REFERENCING OLD TABLE AS old_items
    FOR EACH STATEMENT EXECUTE FUNCTION count_items();

CREATE TABLE responses (
    id          bigserial PRIMARY KEY,
    http_status integer,
    body        text
);

CREATE TABLE attempts (
    id          bigserial PRIMARY KEY,
    item_id     bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL,
    class       text NOT NULL,
    reason      text NOT NULL,
    message     text NOT NULL,
    response_id bigint REFERENCES responses (id),
    retry_at    timestamptz
);
CREATE INDEX attempts_item ON attempts (item_id, at);
CREATE INDEX attempts_at ON attempts (at, id);
CREATE INDEX attempts_rejected ON attempts (at, id) WHERE class <> 'accepted';
CREATE INDEX attempts_response ON attempts (response_id);

CREATE TABLE budget_usage (
    rule               text NOT NULL,
    window_key         text NOT NULL,
    period             text NOT NULL,
    used               bigint NOT NULL DEFAULT 0,
    limit_value        bigint,
    resets_at          timestamptz NOT NULL,
    reported_at        timestamptz,
    reported_remaining bigint,
    PRIMARY KEY (rule, window_key)
);

CREATE TABLE blocks (
    rule  text PRIMARY KEY,
    until timestamptz NOT NULL
);

CREATE TABLE reservations (
    id          bigserial PRIMARY KEY,
    host        text NOT NULL,
    pid         bigint NOT NULL,
    started     bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    lease_until timestamptz NOT NULL,
    units       bigint NOT NULL
);

CREATE TABLE reservation_rules (
    reservation_id bigint NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    rule           text NOT NULL,
    window_key     text NOT NULL,
    units          bigint NOT NULL
);
CREATE INDEX reservation_rules_rule ON reservation_rules (rule, window_key);
CREATE INDEX reservation_rules_reservation ON reservation_rules (reservation_id);

CREATE TABLE pacing (
    key    text PRIMARY KEY,
    tat_ms bigint NOT NULL
);

CREATE TABLE credentials (
    fingerprint   text PRIMARY KEY,
    first_used_at timestamptz NOT NULL
);

CREATE TABLE runs (
    id         integer PRIMARY KEY CHECK (id = 1),
    latest_now timestamptz NOT NULL
);
