-- Baton core on PostgreSQL: the same tables as SQLite's 0001 + 0002, in PostgreSQL's types.
-- JSON columns are `json` (kept as written: key order matters to forms built from schemas).
-- Job times are epoch seconds of the database's clock, so leases agree across hosts.
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    workflow TEXT NOT NULL,
    input JSON NOT NULL,
    status TEXT NOT NULL,
    output JSON,
    error TEXT,
    created_by TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    checkpoint_id TEXT
);
CREATE INDEX runs_status_seq ON runs (status, seq);

CREATE TABLE checkpoints (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    body BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE schemas (
    hash TEXT PRIMARY KEY,
    body JSON NOT NULL
);

CREATE TABLE human_requests (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    maf_request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    reason TEXT NOT NULL,
    context JSON NOT NULL,
    proposed_action JSON,
    payload JSON NOT NULL,
    allowed_decisions JSON NOT NULL,
    schema_hash TEXT NOT NULL REFERENCES schemas (hash),
    team TEXT NOT NULL,
    assignee TEXT,
    priority TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ,
    approvals_required INTEGER NOT NULL DEFAULT 1,
    policy_rule TEXT,
    answer JSON,
    answered_by TEXT,
    answered_at TIMESTAMPTZ,
    UNIQUE (run_id, maf_request_id)
);
CREATE INDEX human_requests_status ON human_requests (status, seq);

CREATE TABLE answers (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    request_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    decision TEXT NOT NULL,
    body JSON NOT NULL,
    at TIMESTAMPTZ NOT NULL
);
CREATE INDEX answers_request ON answers (request_id);

CREATE TABLE audit_events (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type TEXT NOT NULL,
    at TIMESTAMPTZ NOT NULL,
    run_id TEXT,
    request_id TEXT,
    actor TEXT NOT NULL,
    data JSON NOT NULL
);
CREATE INDEX audit_run ON audit_events (run_id);
CREATE INDEX audit_request ON audit_events (request_id) WHERE request_id IS NOT NULL;

-- The application never changes history.
CREATE FUNCTION baton_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only';
END $$;
CREATE TRIGGER audit_no_update BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION baton_audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION baton_audit_append_only();

-- Every process that watches the audit trail (the inbox's live stream) hears of each event as its
-- transaction commits, in commit order: the payload is the event's id.
CREATE FUNCTION baton_audit_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('baton_audit', NEW.id::text);
    RETURN NULL;
END $$;
CREATE TRIGGER audit_notify AFTER INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION baton_audit_notify();

-- Resume, start, notify and timer work; `available_at` and `lease_until` in epoch seconds.
CREATE TABLE jobs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind TEXT NOT NULL,
    run_id TEXT,
    request_id TEXT,
    payload JSON NOT NULL DEFAULT '{}',
    available_at DOUBLE PRECISION NOT NULL,
    lease_owner TEXT,
    lease_until DOUBLE PRECISION,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE UNIQUE INDEX jobs_one_queued_drive ON jobs (run_id)
    WHERE kind IN ('start', 'resume') AND lease_owner IS NULL;
CREATE INDEX jobs_due ON jobs (available_at);

-- Workers sleep between polls; a queued job wakes them at once.
CREATE FUNCTION baton_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.lease_owner IS NULL THEN
        PERFORM pg_notify('baton_jobs', NEW.kind);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_notify AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION baton_jobs_notify();

CREATE TABLE effects (
    key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments JSON NOT NULL,
    result JSON NOT NULL,
    at TIMESTAMPTZ NOT NULL
);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,
    password_hash TEXT,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE teams (
    name TEXT PRIMARY KEY,
    description TEXT NOT NULL DEFAULT ''
);

CREATE TABLE memberships (
    user_id TEXT NOT NULL REFERENCES users (id),
    team TEXT NOT NULL REFERENCES teams (name),
    PRIMARY KEY (user_id, team)
);

CREATE TABLE api_tokens (
    hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id),
    label TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);
