-- Schema 6, over schema 5: `indexq serve`'s intake limits.

-- Per token (its id, never the token) and rule (`requests_per_second`,
-- `urls_per_minute`): the GCRA's theoretical arrival time, in microseconds
-- since 1970-01-01 UTC (NULL: never taken). Locked, decided at the server's
-- clock and advanced in one transaction, so every `serve` sharing the
-- ledger shares it; a request the rule refuses leaves it as it was. Not
-- carried by `ledger copy`.
CREATE TABLE intake_limits (
    token  text NOT NULL,
    rule   text NOT NULL,
    tat_us bigint,
    PRIMARY KEY (token, rule)
);
