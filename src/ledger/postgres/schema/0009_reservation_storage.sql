-- Schema 9 of the PostgreSQL ledger, over schema 8: a reservation's list of
-- items is stored as it is, out of the row, not compressed. The server
-- compressed each claim's list as the reservation was inserted, which cost far
-- more than storing it as it is (docs/performance.md, *Measured choices*). A
-- list is written once and read only to reconcile a claim or tell what is in
-- flight. Lists written before stay as they were (the setting changes no row;
-- both are read the same).
ALTER TABLE reservations ALTER COLUMN items SET STORAGE EXTERNAL;
