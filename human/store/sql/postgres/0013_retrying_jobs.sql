-- A run's drive that failed and waits to be tried again (`run_retrying`, read by every run page
-- and the Runs list): found by run without reading the jobs of every open request's timers.
CREATE INDEX jobs_retrying ON jobs (run_id)
    WHERE kind IN ('start', 'resume') AND last_error IS NOT NULL;
