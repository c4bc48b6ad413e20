-- One queued job wakes one worker. Each waiting worker process LISTENs on a channel of its own
-- and keeps a row here alive (`live_until`, epoch seconds on the database's clock). A job queued
-- unleased NOTIFYs the live listener woken longest ago, its id as the payload: a round robin
-- that two queuing transactions at once spread over two listeners (SKIP LOCKED). With no live
-- listener, `baton_jobs` hears it, as before. The job stays unleased: whoever polls first may
-- take it, so a listener that died without a word strands nothing.
CREATE TABLE job_listeners (
    channel TEXT PRIMARY KEY,
    live_until DOUBLE PRECISION NOT NULL,
    woken_at DOUBLE PRECISION NOT NULL DEFAULT 0
);

CREATE OR REPLACE FUNCTION baton_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    now_s DOUBLE PRECISION := extract(epoch from clock_timestamp());
    chosen TEXT;
BEGIN
    IF NEW.lease_owner IS NOT NULL THEN
        RETURN NULL;
    END IF;
    SELECT channel INTO chosen FROM job_listeners WHERE live_until >= now_s
        ORDER BY woken_at LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        UPDATE job_listeners SET woken_at = now_s WHERE channel = chosen;
    ELSE  -- every live listener is being chosen by another transaction: the one woken longest ago
        SELECT channel INTO chosen FROM job_listeners WHERE live_until >= now_s
            ORDER BY woken_at LIMIT 1;
    END IF;
    PERFORM pg_notify(COALESCE(chosen, 'baton_jobs'), NEW.id::text);
    RETURN NULL;
END $$;
