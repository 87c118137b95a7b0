-- Schema 9, over schema 8: a claim writes no item row. What a reservation took
-- is the runs of consecutive ids it lists in `in_flight` (one row a run:
-- `first`–`last`, runs never overlap), and the items' rows stay `queued`: an
-- item is in flight while a run holds its id. A claim that set each item's
-- state rewrote every row it took, a share of a fresh submit worth saving
-- (docs/performance.md, *Measured choices*).
CREATE TABLE in_flight (
    first          INTEGER PRIMARY KEY,
    last           INTEGER NOT NULL CHECK (last >= first),
    reservation_id INTEGER NOT NULL,
    group_id       INTEGER NOT NULL
);
CREATE INDEX in_flight_reservation ON in_flight (reservation_id);

-- Each reservation of schema 8 takes its items marked in flight, and their
-- rows are queued again under it: a ledger left with a killed run's claim
-- upgrades, and that claim is reconciled and sent again as before. (Its
-- list, `reservations.items`, named the same items; one an older indexq
-- made had none, and its rows said which.)
INSERT INTO in_flight (first, last, reservation_id, group_id)
SELECT id, id, reservation_id, group_id FROM items
WHERE state = 'in_flight' AND reservation_id IN (SELECT id FROM reservations);
UPDATE items SET state = 'queued'
WHERE state = 'in_flight' AND reservation_id IN (SELECT id FROM reservations);
-- The kept counts follow (a row a run holds is counted queued).
UPDATE groups SET
    queued = queued + (SELECT COUNT(*) FROM in_flight f WHERE f.group_id = groups.id),
    in_flight = in_flight - (SELECT COUNT(*) FROM in_flight f WHERE f.group_id = groups.id);

-- No claim marks a row any more. An older indexq still running against the
-- upgraded ledger fails its claims and answers on the missing columns (it
-- sends nothing new, and what it had in flight is reconciled) rather than
-- take items a run holds. A row still `in_flight` is one a copy brought in
-- flight with no reservation, as before.
ALTER TABLE items DROP COLUMN reservation_id;
ALTER TABLE reservations DROP COLUMN items;

-- The items as every reader but admission's look-up sees them: `state` is
-- `in_flight` for those a run holds (the run with the greatest `first` at
-- or before the id, if it reaches it).
CREATE VIEW item_states AS
SELECT i.id, i.group_id, i.url_key, i.url,
       CASE WHEN (SELECT f.last FROM in_flight f WHERE f.first <= i.id ORDER BY f.first DESC LIMIT 1) >= i.id
            THEN 'in_flight' ELSE i.state END AS state,
       i.action, i.lastmod, i.next_attempt_at, i.enqueued_at, i.attempts, i.last_class, i.streak,
       i.streak_started_at, i.accepted_at, i.parked_fingerprint, i.last_request_id
FROM items i;
