-- Rate-limit counters live for a minute: they need no write-ahead log.
-- Unlogged, an increment commits without waiting for a WAL flush; after a
-- crash the table is empty, which only restarts the current minute's count.
ALTER TABLE request_counts SET UNLOGGED;
