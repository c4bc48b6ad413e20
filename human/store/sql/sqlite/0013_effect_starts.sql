-- A call of a tool that takes no idempotency key (a plain MAF tool a person approved), started
-- and not yet recorded in `effects`: written durably before the tool runs, deleted with its
-- record. One left behind tells a later drive the tool may have acted: it is not run again.
CREATE TABLE effect_starts (
    key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    at TEXT NOT NULL
);
