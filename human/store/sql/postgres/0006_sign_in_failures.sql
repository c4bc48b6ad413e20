-- Failed sign-ins by the name tried (known or not, so a lockout tells nothing of who exists): how
-- many in a row, and when the last was (epoch seconds of Baton's clock). A success clears the row;
-- a streak older than the lockout starts over.
CREATE TABLE sign_in_failures (
    name TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    last_failed_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX sign_in_failures_last ON sign_in_failures (last_failed_at);
