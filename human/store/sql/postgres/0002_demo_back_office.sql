-- Once the demo's back office (orders, refunds). It is a system of its own now, with its own
-- migrations (executors/shipped/back_office/sql/); this number stays so that every database's
-- schema_version reads the same. A database that ran the old text keeps its tables, which the
-- back office adopts.
SELECT 1;
