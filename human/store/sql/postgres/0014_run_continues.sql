-- A run that continues an ended run's conversation (`POST /api/runs` with `continues`, an AG-UI
-- thread's next message): its start hands the workflow the earlier runs' messages, read along
-- this column. `runs_continues` finds the runs that continue one (its page links them).
ALTER TABLE runs ADD COLUMN continues TEXT REFERENCES runs (id);
CREATE INDEX runs_continues ON runs (continues) WHERE continues IS NOT NULL;
