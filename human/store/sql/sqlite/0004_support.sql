-- Each run's agent conversation (messages, tool calls and results, handoffs, what people were
-- asked and answered), appended in the transaction of the progress it belongs to.
CREATE TABLE run_transcript (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- The support demo's back office: customers, account closures and messages sent to customers,
-- each effect keyed by the idempotency key it was given.
CREATE TABLE customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active'
);

CREATE TABLE account_closures (
    idempotency_key TEXT PRIMARY KEY,
    closure_id TEXT NOT NULL UNIQUE,
    customer_id TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE customer_messages (
    idempotency_key TEXT PRIMARY KEY,
    message_id TEXT NOT NULL UNIQUE,
    customer_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
