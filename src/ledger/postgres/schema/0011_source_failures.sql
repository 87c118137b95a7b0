-- Schema 11, over schema 10: the sources that cannot be read.

-- Per property and source (a `sources` entry as configured: its URL or
-- path), while its reads fail: the last failed read's reason (a `source_*`
-- local reason) and message, since when its reads have failed, the latest
-- failed read, and when a run last said so (`[submit] remind`; NULL: not
-- yet). A read that succeeds deletes the row. Times are whole
-- seconds. Carried by `ledger copy` (the later failed read wins; the
-- earlier `since` and the later reminder are kept).
CREATE TABLE source_failures (
    property    TEXT NOT NULL,
    source      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    since       timestamptz NOT NULL,
    failed_at   timestamptz NOT NULL,
    reminded_at timestamptz,
    PRIMARY KEY (property, source)
);
