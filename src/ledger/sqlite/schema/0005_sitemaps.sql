-- Schema 5, over schema 4: sitemaps submitted to the engines (Search
-- Console's `sitemaps.submit`, Bing's `SubmitFeed`) and what the engines
-- report of them.

-- A group's channel: `urls` (every group before schema 5), or `sitemaps` —
-- one group per property, engine and sitemap, whose one item is the
-- sitemap's URL (its `target`).
ALTER TABLE groups ADD COLUMN channel TEXT NOT NULL DEFAULT 'urls' CHECK (channel IN ('urls', 'sitemaps'));

-- When indexq first saw each sitemap's current body (by its digest): what a
-- sitemap submission is compared with. A sitemap read before schema 5 is
-- taken to have changed when it was last read.
ALTER TABLE sources ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
UPDATE sources SET changed_at = fetched_at;

-- Per sitemap group: when the engine's report was last read, the last
-- report read (the engine's own times, pending, errors, warnings, URLs),
-- since when it has said the sitemap has errors, and the last read when it
-- failed (its answer classified) and since when reads have failed so.
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
