-- The executor that asked each request (MAF's source_executor_id), so a run's page can show
-- where on the workflow graph the run waits. NULL for requests stored before this migration.
ALTER TABLE human_requests ADD COLUMN executor_id TEXT;
