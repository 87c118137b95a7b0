-- Schema 12, its second step (`sqlite/schema.rs` runs it after filling the
-- batches, spans, hash runs and item changes from the items, in the same
-- transaction): the items go. Every URL is now in its batch row (its
-- text, lastmod and action), every item's state in the span holding it,
-- and an item's lastmod or action that differs from its batch row's in
-- `item_changes`; nothing is kept per URL beyond them. The view over the
-- items (schema 9's `item_states`) goes first; the table's indexes go with
-- it. An indexq of schema 11 still running fails on the missing table
-- rather than admit into it.

DROP VIEW item_states;
DROP TABLE items;
