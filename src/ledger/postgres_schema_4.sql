-- Schema 4, over schema 3: Google URL inspections (`skip_indexed`).

-- Per property and class of answer: how many inspections got an answer of
-- that class since the ledger began (the metrics' counter), and the last of
-- them (`status` shows the latest of the classes other than `accepted` as
-- the last inspection failure).
CREATE TABLE inspections (
    property     TEXT NOT NULL,
    class        TEXT NOT NULL CHECK (class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    count        bigint NOT NULL CHECK (count >= 0),
    last_at      timestamptz NOT NULL,
    last_reason  TEXT NOT NULL,
    last_message TEXT NOT NULL,
    last_hint    TEXT,
    last_status  INTEGER,
    PRIMARY KEY (property, class)
);
