-- Schema 7 of the PostgreSQL ledger, over schema 6: the items' foreign key to
-- their group is dropped. PostgreSQL checks a foreign key with a trigger for
-- every row a statement inserts (a look-up of the group and a lock on its row),
-- which was a large share of an admission's `INSERT` (docs/performance.md,
-- *Measured choices*). Admission checks the groups of its batch itself, once
-- per group, in the same transaction (as SQLite's admission does, which runs
-- with foreign keys off); groups are never deleted, and every other writer of
-- items (a copy) finds each item's group in the ledger before it writes it.
ALTER TABLE items DROP CONSTRAINT items_group_id_fkey;
