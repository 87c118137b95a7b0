-- A copy's staging tables (`copy.rs`): the source's items, dropped items
-- and requests as they come, a chunk at a time (COPY), with what the merge
-- finds or gives each here (`dst`: its id in this ledger; `written`: an
-- item given the source's state; `fresh`: a row this copy inserts).
-- Temporary, dropped when the copy's transaction ends.

CREATE TEMP TABLE copy_items (
    src                bigint PRIMARY KEY,
    grp                bigint NOT NULL,
    url_key            bigint NOT NULL,
    url                text NOT NULL,
    state              text NOT NULL,
    action             text NOT NULL,
    lastmod            timestamptz,
    next_attempt_at    timestamptz,
    enqueued_at        timestamptz NOT NULL,
    attempts           integer NOT NULL,
    last_class         text,
    streak             integer NOT NULL,
    streak_started_at  timestamptz,
    accepted_at        timestamptz,
    parked_fingerprint text,
    last_request       bigint,
    dst                bigint,
    written            boolean NOT NULL DEFAULT false,
    fresh              boolean NOT NULL DEFAULT false
) ON COMMIT DROP;

CREATE TEMP TABLE copy_dropped (
    src        bigint PRIMARY KEY,
    grp        bigint NOT NULL,
    url_key    bigint NOT NULL,
    url        text NOT NULL,
    dropped_at timestamptz NOT NULL,
    dst        bigint,
    fresh      boolean NOT NULL DEFAULT false
) ON COMMIT DROP;

CREATE TEMP TABLE copy_requests (
    src         bigint PRIMARY KEY,
    grp         bigint NOT NULL,
    at          timestamptz NOT NULL,
    class       text NOT NULL,
    reason      text NOT NULL,
    message     text NOT NULL,
    http_status integer,
    body        text,
    retry_at    timestamptz,
    n           integer NOT NULL,
    first_item  bigint NOT NULL,
    last_item   bigint NOT NULL,
    items       bytea,
    dst         bigint,
    fresh       boolean NOT NULL DEFAULT false
) ON COMMIT DROP;
