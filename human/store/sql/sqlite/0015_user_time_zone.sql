-- A person's clock, an IANA time zone name (`Europe/Berlin`): messages to them give times on it.
-- An administrator sets it; else the browser's is kept at their first sign-in. NULL: UTC.
ALTER TABLE users ADD COLUMN time_zone TEXT;
