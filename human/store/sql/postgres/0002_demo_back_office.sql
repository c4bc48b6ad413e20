-- The demo's back office: orders a refund agent looks up, refunds keyed by idempotency key.
CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    total DOUBLE PRECISION NOT NULL,
    currency TEXT NOT NULL DEFAULT 'EUR'
);

CREATE TABLE refunds (
    idempotency_key TEXT PRIMARY KEY,
    refund_id TEXT NOT NULL UNIQUE,
    order_id TEXT NOT NULL,
    amount DOUBLE PRECISION NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
