-- Imported archives state their gaps (docs/INGEST.md §6, docs/TIME-MACHINE.md §4): an hour (or day)
-- inside an imported range that the source has no file for is a run record `source_missing`, ended
-- by the next `start` or by its own `stop`. Adding a value at the end of an Enum8 rewrites no part.
ALTER TABLE capture_events
    MODIFY COLUMN kind Enum8('start' = 1, 'stop' = 2, 'subscribe' = 3, 'open' = 4, 'close' = 5, 'resync' = 6, 'source_missing' = 7);
