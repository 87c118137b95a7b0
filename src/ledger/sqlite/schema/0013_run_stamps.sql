-- Schema 13, over schema 12: each hash run gets a stamp, a random number
-- written with it, so a process that keeps a run's entries in memory
-- (`ledger/kept_runs.rs`) can tell the run it kept from another given the
-- same id later: a run's id is a rowid, which SQLite gives again after
-- the run's transaction rolls back or the highest run is deleted. The
-- runs already written get theirs here.

ALTER TABLE hash_runs ADD COLUMN stamp INTEGER NOT NULL DEFAULT 0;
UPDATE hash_runs SET stamp = random();
