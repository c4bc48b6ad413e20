-- When an open request escalates next, where that comes before its deadline (else NULL): its
-- team's time runs out then. The inbox's "most urgent first" sorts by it, else by the deadline
-- (`human.routing.escalates_at`). Requests asked before this column sort by their deadline.
ALTER TABLE human_requests ADD COLUMN escalates_at TEXT;
