-- A timer queued for later (a deadline, an escalation) wakes no worker when it is queued: no
-- worker could take it yet, so the wake-up only cost a lease round that found nothing. An idle
-- worker's poll (`jobs_due`) finds it once it is due. A timer due already, by the database's
-- clock, still wakes one.
CREATE OR REPLACE FUNCTION baton_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    now_s DOUBLE PRECISION := extract(epoch from clock_timestamp());
    chosen TEXT;
BEGIN
    IF NEW.lease_owner IS NOT NULL OR NEW.due_at > now_s THEN
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
