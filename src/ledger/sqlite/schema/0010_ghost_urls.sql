-- Schema 10, over schema 9: the public URL of each Ghost post or page.

-- Per property and Ghost id (posts and pages share Ghost's `posts` table,
-- so one id names one of either): the public URL its last `published` or
-- `published.edited` webhook gave, and when (seconds since 1970-01-01 UTC).
-- Ghost's `unpublished` and `deleted` payloads carry no public URL (an
-- unpublished post's is its `/p/<uuid>/` preview, a deleted one has none):
-- this is the URL they announce as deleted. Carried by `ledger copy` (the
-- later announcement wins).
CREATE TABLE ghost_urls (
    property     TEXT NOT NULL,
    ghost_id     TEXT NOT NULL,
    url          TEXT NOT NULL,
    announced_at INTEGER NOT NULL,
    PRIMARY KEY (property, ghost_id)
);
