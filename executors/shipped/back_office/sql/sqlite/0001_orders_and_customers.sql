-- Orders a refund agent looks up, refunds keyed by idempotency key; customers, account closures
-- and messages sent to customers, each effect keyed by the idempotency key it was given.
-- IF NOT EXISTS: a database made before the back office had migrations of its own already holds
-- these tables (Baton's own migrations 0002 and 0004 once made them) and keeps their rows.
CREATE TABLE IF NOT EXISTS orders (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    total REAL NOT NULL,
    currency TEXT NOT NULL DEFAULT 'EUR'
);

CREATE TABLE IF NOT EXISTS refunds (
    idempotency_key TEXT PRIMARY KEY,
    refund_id TEXT NOT NULL UNIQUE,
    order_id TEXT NOT NULL,
    amount REAL NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active'
);

CREATE TABLE IF NOT EXISTS account_closures (
    idempotency_key TEXT PRIMARY KEY,
    closure_id TEXT NOT NULL UNIQUE,
    customer_id TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS customer_messages (
    idempotency_key TEXT PRIMARY KEY,
    message_id TEXT NOT NULL UNIQUE,
    customer_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
