-- Browser sessions that were signed out: a copy of the session's cookie is refused from then on.
-- `ended_at` is epoch seconds of Baton's clock; rows older than the session lifetime are pruned.
CREATE TABLE ended_sessions (
    id TEXT PRIMARY KEY,
    ended_at REAL NOT NULL
);
CREATE INDEX ended_sessions_at ON ended_sessions (ended_at);
