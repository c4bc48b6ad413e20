-- Baton core: runs, checkpoints, human requests, answers, audit, jobs, effects, users, tokens.
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    workflow TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    output TEXT,
    error TEXT,
    created_by TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    checkpoint_id TEXT
);
CREATE INDEX runs_status_seq ON runs (status, seq);

CREATE TABLE checkpoints (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    body BLOB NOT NULL,
    created_at TEXT NOT NULL
);
-- A run keeps one checkpoint, the one `runs.checkpoint_id` names; progress replaces it.

CREATE TABLE schemas (
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL
);

CREATE TABLE human_requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    maf_request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    reason TEXT NOT NULL,
    context TEXT NOT NULL,
    proposed_action TEXT,
    payload TEXT NOT NULL,
    allowed_decisions TEXT NOT NULL,
    schema_hash TEXT NOT NULL REFERENCES schemas (hash),
    team TEXT NOT NULL,
    assignee TEXT,
    priority TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    approvals_required INTEGER NOT NULL DEFAULT 1,
    policy_rule TEXT,
    answer TEXT,
    answered_by TEXT,
    answered_at TEXT,
    UNIQUE (run_id, maf_request_id)
);
CREATE INDEX human_requests_status ON human_requests (status, seq);
-- A run's requests are found through UNIQUE (run_id, maf_request_id).

CREATE TABLE answers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    decision TEXT NOT NULL,
    body TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX answers_request ON answers (request_id);

CREATE TABLE audit_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    at TEXT NOT NULL,
    run_id TEXT,
    request_id TEXT,
    actor TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX audit_run ON audit_events (run_id);
CREATE INDEX audit_request ON audit_events (request_id) WHERE request_id IS NOT NULL;
-- The application never changes history.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;

-- Resume, start, notify and timer work; `lease_until` in epoch seconds.
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    run_id TEXT,
    request_id TEXT,
    payload TEXT NOT NULL DEFAULT '{}',
    available_at REAL NOT NULL,
    lease_owner TEXT,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
-- The table holds only work in flight, so it goes unindexed but for this:
-- at most one not-yet-leased drive job per run: a queued job sees every answer that came before.
CREATE UNIQUE INDEX jobs_one_queued_drive ON jobs (run_id)
    WHERE kind IN ('start', 'resume') AND lease_owner IS NULL;

CREATE TABLE effects (
    key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    result TEXT NOT NULL,
    at TEXT NOT NULL
);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,
    password_hash TEXT,
    created_at TEXT NOT NULL
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
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
