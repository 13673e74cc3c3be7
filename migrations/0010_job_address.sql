-- The address the job's latest exchange came from (the TCP peer, or what a trusted proxy
-- forwarded), as text: `jobs list` shows it, and it says where a job's credentials were asked from.
ALTER TABLE jobs ADD COLUMN address TEXT;
