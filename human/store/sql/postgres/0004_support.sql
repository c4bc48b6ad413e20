-- Each run's agent conversation (messages, tool calls and results, handoffs, what people were
-- asked and answered), appended in the transaction of the progress it belongs to.
CREATE TABLE run_transcript (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry JSON NOT NULL,
    at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- (The support demo's customers, account closures and messages are the back office's own
-- tables now: executors/shipped/back_office/sql/.)
