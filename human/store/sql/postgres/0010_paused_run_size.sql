-- A paused run, smaller on disk.
-- A proposed action's arguments schema (the same for every call of one tool) is kept once in
-- `schemas`, as response schemas are; the request names it by hash and its `proposed_action`
-- holds the rest. NULL: the schema, if any, is still inside `proposed_action` (older rows).
ALTER TABLE human_requests ADD COLUMN arguments_schema_hash TEXT REFERENCES schemas (hash);

-- The entries one commit appends share its time: only the first of them carries it (`at`), the
-- others' NULL reads "the time of the entry before".
ALTER TABLE run_transcript ALTER COLUMN at DROP NOT NULL;
