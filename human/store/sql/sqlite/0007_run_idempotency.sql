-- A client's Idempotency-Key on POST /api/runs: per person, the run it started and a digest of
-- what was asked (workflow and input), so a retry gets the same run and a reused key with another
-- body is refused. Written in the run's own transaction.
CREATE TABLE run_idempotency (
    created_by TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (id),
    PRIMARY KEY (created_by, key)
);
