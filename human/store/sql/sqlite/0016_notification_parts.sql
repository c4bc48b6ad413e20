-- The parts of a notification its channel handed over in attempts that then failed (an email's
-- message for one time zone of several), a JSON list: a retry sends only the others.
ALTER TABLE notifications ADD COLUMN parts_sent TEXT;
