-- The schema of a new SQLite ledger, at the version `SCHEMA_VERSION`
-- (schema.rs): what the migrations in this folder make of an empty file,
-- in one script. A new ledger runs this instead of every step from
-- schema 1; `a_new_ledger_is_what_every_step_makes` checks that the two
-- agree, and prints this file anew when they do not.

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
    accepted  INTEGER NOT NULL DEFAULT 0, channel TEXT NOT NULL DEFAULT 'urls' CHECK (channel IN ('urls', 'sitemaps')),
    UNIQUE (property, engine, target)
);

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

CREATE TABLE submit_runs (
    id         INTEGER PRIMARY KEY,
    host       TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    ended_ms   INTEGER NOT NULL,
    exit_code  INTEGER NOT NULL
);

CREATE TABLE sources (
    url           TEXT PRIMARY KEY,
    etag          TEXT,
    last_modified TEXT,
    digest        TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('urlset', 'index')),
    routes        TEXT NOT NULL,
    fetched_at    INTEGER NOT NULL
, changed_at INTEGER NOT NULL DEFAULT 0);

CREATE TABLE reminders (
    group_id    INTEGER NOT NULL REFERENCES groups (id),
    reason      TEXT NOT NULL,
    reminded_at INTEGER NOT NULL,
    PRIMARY KEY (group_id, reason)
);

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

CREATE TABLE dropped_items (
    id         INTEGER PRIMARY KEY,
    group_id   INTEGER NOT NULL REFERENCES groups (id),
    url_key    INTEGER NOT NULL,
    url        TEXT NOT NULL,
    dropped_at INTEGER NOT NULL
);

CREATE TABLE sitemap_reports (
    group_id       INTEGER PRIMARY KEY REFERENCES groups (id),
    read_at        INTEGER NOT NULL,
    read_ok_at     INTEGER,
    listed         INTEGER,
    submitted      INTEGER,
    downloaded     INTEGER,
    pending        INTEGER,
    errors         INTEGER,
    warnings       INTEGER,
    urls           INTEGER,
    status         TEXT,
    errors_since   INTEGER,
    failure_class  TEXT CHECK (failure_class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    failure_reason TEXT,
    failure_message TEXT,
    failure_hint   TEXT,
    failure_status INTEGER,
    failure_since  INTEGER
);

CREATE TABLE intake_limits (
    token  TEXT NOT NULL,
    rule   TEXT NOT NULL,
    tat_us INTEGER NOT NULL,
    PRIMARY KEY (token, rule)
);

CREATE TABLE in_flight (
    first          INTEGER PRIMARY KEY,
    last           INTEGER NOT NULL CHECK (last >= first),
    reservation_id INTEGER NOT NULL,
    group_id       INTEGER NOT NULL
);

CREATE TABLE ghost_urls (
    property     TEXT NOT NULL,
    ghost_id     TEXT NOT NULL,
    url          TEXT NOT NULL,
    announced_at INTEGER NOT NULL,
    PRIMARY KEY (property, ghost_id)
);

CREATE TABLE source_failures (
    property    TEXT NOT NULL,
    source      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    since       INTEGER NOT NULL,
    failed_at   INTEGER NOT NULL,
    reminded_at INTEGER,
    PRIMARY KEY (property, source)
);

CREATE TABLE batches (
    first_id   INTEGER PRIMARY KEY,
    group_id   INTEGER NOT NULL REFERENCES groups (id),
    n          INTEGER NOT NULL CHECK (n > 0),
    created_at INTEGER NOT NULL,
    lastmods   BLOB,
    actions    BLOB,
    sorted     BLOB NOT NULL,
    texts      BLOB NOT NULL
);

CREATE TABLE item_changes (
    id      INTEGER PRIMARY KEY,
    lastmod INTEGER,
    action  TEXT NOT NULL CHECK (action = 'updated' OR action = 'deleted')
);

CREATE TABLE spans (
    first              INTEGER PRIMARY KEY,
    last               INTEGER NOT NULL CHECK (last >= first),
    group_id           INTEGER NOT NULL,
    state              TEXT NOT NULL
                       CHECK (state = 'queued' OR state = 'in_flight' OR state = 'accepted' OR state = 'parked'),
    next_attempt_at    INTEGER,
    enqueued_at        INTEGER NOT NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_class         TEXT CHECK (last_class = 'accepted' OR last_class = 'quota' OR last_class = 'transient'
                                   OR last_class = 'key_pending' OR last_class = 'misconfigured'),
    streak             INTEGER NOT NULL DEFAULT 0,
    streak_started_at  INTEGER,
    accepted_at        INTEGER,
    parked_fingerprint TEXT,
    last_request_id    INTEGER
);

CREATE TABLE hash_runs (
    run      INTEGER PRIMARY KEY,
    group_id INTEGER NOT NULL,
    tier     INTEGER NOT NULL CHECK (tier >= 0),
    n        INTEGER NOT NULL CHECK (n > 0),
    batch    INTEGER REFERENCES batches (first_id), stamp INTEGER NOT NULL DEFAULT 0,
    CHECK ((tier = 0) = (batch IS NOT NULL))
);

CREATE TABLE hash_pages (
    run        INTEGER NOT NULL,
    first_hash BLOB NOT NULL,
    entries    BLOB NOT NULL,
    PRIMARY KEY (run, first_hash)
) WITHOUT ROWID;

CREATE INDEX reservation_rules_rule ON reservation_rules (rule, window_key);

CREATE INDEX requests_group ON requests (group_id, at);

CREATE INDEX requests_rejected ON requests (group_id, at) WHERE class != 'accepted';

CREATE INDEX requests_at ON requests (at);

CREATE INDEX dropped_items_url ON dropped_items (group_id, url_key);

CREATE INDEX in_flight_reservation ON in_flight (reservation_id);

CREATE INDEX spans_queued ON spans (group_id, next_attempt_at) WHERE state = 'queued';

CREATE INDEX spans_parked ON spans (group_id) WHERE state = 'parked';

CREATE INDEX hash_runs_group ON hash_runs (group_id, tier);
