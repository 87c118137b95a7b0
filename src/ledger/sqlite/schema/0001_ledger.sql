-- Schema 1 of the SQLite ledger: the first migration of every ledger (a
-- new ledger takes the same steps as an old one). Its tables are rewritten
-- by schema 2; the groups' kept counts here are kept by triggers, which
-- schema 2 drops.
CREATE TABLE groups (
    id        INTEGER PRIMARY KEY,
    property  TEXT NOT NULL,
    engine    TEXT NOT NULL,
    target    TEXT NOT NULL,
    -- The group's items by state (counting a queue of a million would read
    -- all of it): `admit` counts the items it inserts (a trigger per row
    -- would slow a large intake), the triggers below every other change.
    queued    INTEGER NOT NULL DEFAULT 0,
    in_flight INTEGER NOT NULL DEFAULT 0,
    parked    INTEGER NOT NULL DEFAULT 0,
    accepted  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (property, engine, target)
);

CREATE TABLE items (
    id                 INTEGER PRIMARY KEY,
    url                TEXT NOT NULL,
    group_id           INTEGER NOT NULL REFERENCES groups (id),
    state              TEXT NOT NULL,
    action             TEXT NOT NULL DEFAULT 'updated',
    lastmod            INTEGER,
    next_attempt_at    INTEGER,
    enqueued_at        INTEGER NOT NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_class         TEXT,
    last_reason        TEXT,
    last_message       TEXT,
    last_http_status   INTEGER,
    streak             INTEGER NOT NULL DEFAULT 0,
    streak_started_at  INTEGER,
    accepted_at        INTEGER,
    parked_fingerprint TEXT,
    reservation_id     INTEGER,
    UNIQUE (url, group_id)
);
CREATE INDEX items_group ON items (group_id, state, next_attempt_at);
CREATE INDEX items_reservation ON items (reservation_id) WHERE reservation_id IS NOT NULL;

CREATE TRIGGER items_uncounted AFTER DELETE ON items BEGIN
    UPDATE groups SET queued = queued - (OLD.state = 'queued'), in_flight = in_flight - (OLD.state = 'in_flight'),
        parked = parked - (OLD.state = 'parked'), accepted = accepted - (OLD.state = 'accepted')
    WHERE id = OLD.group_id;
END;
CREATE TRIGGER items_recounted AFTER UPDATE OF state, group_id ON items
WHEN OLD.state IS NOT NEW.state OR OLD.group_id IS NOT NEW.group_id BEGIN
    UPDATE groups SET queued = queued - (OLD.state = 'queued'), in_flight = in_flight - (OLD.state = 'in_flight'),
        parked = parked - (OLD.state = 'parked'), accepted = accepted - (OLD.state = 'accepted')
    WHERE id = OLD.group_id;
    UPDATE groups SET queued = queued + (NEW.state = 'queued'), in_flight = in_flight + (NEW.state = 'in_flight'),
        parked = parked + (NEW.state = 'parked'), accepted = accepted + (NEW.state = 'accepted')
    WHERE id = NEW.group_id;
END;

CREATE TABLE responses (
    id          INTEGER PRIMARY KEY,
    http_status INTEGER,
    body        TEXT
);

CREATE TABLE attempts (
    id          INTEGER PRIMARY KEY,
    item_id     INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    class       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    response_id INTEGER REFERENCES responses (id),
    retry_at    INTEGER
);
CREATE INDEX attempts_item ON attempts (item_id, at);
CREATE INDEX attempts_at ON attempts (at);
CREATE INDEX attempts_rejected ON attempts (at, id) WHERE class != 'accepted';

CREATE TABLE budget_usage (
    rule               TEXT NOT NULL,
    window_key         TEXT NOT NULL,
    period             TEXT NOT NULL,
    used               INTEGER NOT NULL DEFAULT 0,
    limit_value        INTEGER,
    resets_at          INTEGER NOT NULL,
    reported_at        INTEGER,
    reported_remaining INTEGER,
    PRIMARY KEY (rule, window_key)
);

CREATE TABLE blocks (
    rule  TEXT PRIMARY KEY,
    until INTEGER NOT NULL
);

CREATE TABLE reservations (
    id          INTEGER PRIMARY KEY,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    started     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    lease_until INTEGER NOT NULL,
    units       INTEGER NOT NULL
);

CREATE TABLE reservation_rules (
    reservation_id INTEGER NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    rule           TEXT NOT NULL,
    window_key     TEXT NOT NULL,
    units          INTEGER NOT NULL
);
CREATE INDEX reservation_rules_rule ON reservation_rules (rule, window_key);

CREATE TABLE pacing (
    key    TEXT PRIMARY KEY,
    tat_ms INTEGER NOT NULL
);

CREATE TABLE credentials (
    fingerprint   TEXT PRIMARY KEY,
    first_used_at INTEGER NOT NULL
);

CREATE TABLE runs (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    latest_now INTEGER NOT NULL
);
