-- Schema 3, over schema 2: what unattended runs keep between runs.

-- The remote sitemaps a run read for a property's `sources`, once every URL
-- read from them was in the ledger: their validators (so that the next
-- fetch is conditional: an unchanged sitemap costs one 304), their body's
-- digest (an unchanged body is not parsed again), their kind (an index is
-- always read in full) and the groups their URLs went to (`routes`).
CREATE TABLE sources (
    url           TEXT PRIMARY KEY,
    etag          TEXT,
    last_modified TEXT,
    digest        TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('urlset', 'index')),
    routes        TEXT NOT NULL,
    fetched_at    INTEGER NOT NULL
);

-- When a run last said that a group's items are parked for a reason (the
-- text of their last answer's reason): said again after `[submit] remind`.
CREATE TABLE reminders (
    group_id    INTEGER NOT NULL REFERENCES groups (id),
    reason      TEXT NOT NULL,
    reminded_at INTEGER NOT NULL,
    PRIMARY KEY (group_id, reason)
);
