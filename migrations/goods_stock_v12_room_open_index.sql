-- Version 12: the waiting room's open queues by an index. Every instance reads room_horizon's
-- open queues (latest > horizon) twenty times a second, and deletes the rooms closed long ago
-- once a minute; a comparison of two columns can use no index, so each read scanned every row.
-- is_open is that comparison, kept by MariaDB with the row, and idx_room_horizon_open indexes it
-- with the latest place: the read takes the open rows alone, the delete the closed ones by age.
ALTER TABLE room_horizon ADD COLUMN is_open tinyint AS (latest > horizon) STORED;
CREATE INDEX idx_room_horizon_open ON room_horizon (is_open, latest);
