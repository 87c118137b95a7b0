-- Schema 13 of the PostgreSQL ledger, over schema 12: the items' sequence
-- steps by 1,000, and each value it gives is the first of a block of 1,000
-- ids, all its taker's (`ID_BLOCK` in `postgres/schema.rs`). An admission of
-- 10,000 new URLs takes 10 values, not 10,000 (the `nextval` calls were a
-- third of the server's work in a fresh submit). A sequence never gives a
-- value twice, so no two blocks meet, and the first value given after this
-- step is the last one given before plus 1,000: no id handed out one at a
-- time before it falls in a block. An older binary refuses the ledger from
-- here on (its one-by-one ids would fall in the blocks).
ALTER SEQUENCE item_ids INCREMENT BY 1000;
