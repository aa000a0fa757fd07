-- A recorder following the whole venue leaves a token whose market resolved or left Gamma's live list
-- (docs/INGEST.md §3): an `unsubscribe` capture record, after which the run holds the token no more
-- (its time reads `not_subscribed`, docs/TIME-MACHINE.md §4). Adding a value at the end of an Enum8
-- rewrites no part.
ALTER TABLE capture_events
    MODIFY COLUMN kind Enum8('start' = 1, 'stop' = 2, 'subscribe' = 3, 'open' = 4, 'close' = 5, 'resync' = 6, 'source_missing' = 7, 'unsubscribe' = 8);
