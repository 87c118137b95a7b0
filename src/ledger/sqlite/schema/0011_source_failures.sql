-- Schema 11, over schema 10: the sources that cannot be read.

-- Per property and source (a `sources` entry as configured: its URL or
-- path), while its reads fail: the last failed read's reason (a `source_*`
-- local reason) and message, since when its reads have failed, the latest
-- failed read, and when a run last said so (`[submit] remind`; NULL: not
-- yet). A read that succeeds deletes the row. Times are seconds since
-- 1970-01-01 UTC. Carried by `ledger copy` (the later failed read wins; the
-- earlier `since` and the later reminder are kept).
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
