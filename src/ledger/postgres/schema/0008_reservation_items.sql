-- Schema 8 of the PostgreSQL ledger, over schema 7: a claim writes no item row.
-- The reservation lists the items it took (`items`, ascending, with their
-- `group_id`) and their rows stay `queued`: an item is in flight while a
-- reservation lists it (the view `in_flight`). A claim that set each item's
-- state wrote a new version of every row it took, with its entries in the key,
-- id and in-flight indexes, a large share of the server's work in a submit
-- (`bench/queue-shape`, shapes A and D; docs/performance.md, *Measured
-- choices*).

ALTER TABLE reservations ADD COLUMN group_id bigint, ADD COLUMN items bigint[] NOT NULL DEFAULT '{}';

-- Each reservation of schema 7 lists the items it marked in flight, and
-- their rows are queued again under it: a ledger left with a killed run's
-- claim upgrades, and that claim is reconciled and sent again as before.
UPDATE reservations r SET group_id = f.group_id, items = f.items
FROM (SELECT reservation_id, min(group_id) AS group_id, array_agg(id ORDER BY id) AS items
      FROM items WHERE state = 'in_flight' GROUP BY reservation_id) f
WHERE r.id = f.reservation_id;
UPDATE items SET state = 'queued' WHERE state = 'in_flight' AND reservation_id IN (SELECT id FROM reservations);

-- No claim marks a row any more. An older indexq still running against the
-- upgraded ledger fails its claims and answers on the missing column (it
-- sends nothing new, and what it had in flight is reconciled) rather than
-- take items a reservation lists. A row still `in_flight` is one a copy
-- brought in flight with no reservation, as before.
DROP INDEX items_in_flight;
ALTER TABLE items DROP COLUMN reservation_id;

-- The items reservations list: in flight.
CREATE VIEW in_flight AS
SELECT r.id AS reservation_id, r.group_id, x.id
FROM reservations r CROSS JOIN LATERAL unnest(r.items) AS x (id);

-- The items as every reader sees them: `state` is `in_flight` for those a
-- reservation lists.
CREATE VIEW item_states AS
SELECT i.id, i.url, i.group_id,
       CASE WHEN i.id IN (SELECT id FROM in_flight) THEN 'in_flight' ELSE i.state END AS state,
       i.action, i.lastmod, i.next_attempt_at, i.enqueued_at, i.attempts, i.last_class, i.streak,
       i.streak_started_at, i.accepted_at, i.parked_fingerprint, i.url_key, i.last_request_id
FROM items i;
