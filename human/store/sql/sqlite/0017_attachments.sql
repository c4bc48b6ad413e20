-- The files that come with requests (a chart to review, a photographed receipt), each kept once
-- under the SHA-256 of its bytes; a request lists its own (`attachments`, a JSON list), and only
-- through a request that lists it is a file opened.
CREATE TABLE attachments (
    id TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    data BLOB NOT NULL,
    created_at TEXT NOT NULL
);
ALTER TABLE human_requests ADD COLUMN attachments TEXT;
