-- Schema 8, over schema 7: a reservation lists the items it claimed, and
-- the index of in-flight items by reservation is dropped. A claim put an
-- entry in that index for every item it took and the answer took it out
-- again (a twentieth of a fresh 100k submit's time), and it was read only
-- to find the items of a reservation whose owner is gone. `items` holds
-- the ids as runs of consecutive ids, each `first-last` or a lone `id`,
-- joined by commas (empty: none); a reservation made before this schema
-- lists its items in flight from the index, before the index goes. One an
-- older indexq makes while still running after this upgrade has NULL: its
-- items are found by reading the items through.

ALTER TABLE reservations ADD COLUMN items TEXT;

UPDATE reservations SET items = (
    SELECT group_concat(id, ',' ORDER BY id) FROM items
    WHERE items.reservation_id = reservations.id AND items.state = 'in_flight'
);

DROP INDEX items_in_flight;
