-- Claims, deadlines and escalation ladders, the notification outbox, people's addresses, token ids.

-- A claim: who holds a request and until when (by Baton's clock). The ladder a request carries,
-- how many of its rungs were applied, and when an expiry was delivered to the workflow.
ALTER TABLE human_requests ADD COLUMN claimed_by TEXT;
ALTER TABLE human_requests ADD COLUMN claimed_until TEXT;
ALTER TABLE human_requests ADD COLUMN escalation TEXT NOT NULL DEFAULT '[]';
ALTER TABLE human_requests ADD COLUMN escalation_level INTEGER NOT NULL DEFAULT 0;
ALTER TABLE human_requests ADD COLUMN delivered_at TEXT;

-- A timer job is due at `due_at` (epoch seconds of Baton's clock, which tests can move);
-- `available_at` stays the machine's clock, for leases and retries as for every job.
ALTER TABLE jobs ADD COLUMN due_at REAL;

-- The outbox: one row per request, channel and occasion (created, escalated), written in the
-- transaction that created or escalated the request; a `notify` job delivers each.
CREATE TABLE notifications (
    id TEXT PRIMARY KEY,
    request_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    event TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX notifications_request ON notifications (request_id);

ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE users ADD COLUMN slack_id TEXT;
CREATE UNIQUE INDEX users_slack_id ON users (slack_id) WHERE slack_id IS NOT NULL;

-- Tokens get a public id (to list and revoke them by) and the first characters as a hint.
ALTER TABLE api_tokens ADD COLUMN id TEXT;
ALTER TABLE api_tokens ADD COLUMN hint TEXT NOT NULL DEFAULT '';
UPDATE api_tokens SET id = 'tok_' || lower(hex(randomblob(8))) WHERE id IS NULL;
CREATE UNIQUE INDEX api_tokens_id ON api_tokens (id);
CREATE INDEX api_tokens_user ON api_tokens (user_id);
