-- Version 9: a request id is its buyer's. The idempotency key was request_id alone, so one
-- buyer's use of an id blocked every other buyer's (409 duplicate_request on each retry)
-- and told them which ids were taken. It is now the pair (request_id, request_owner), where
-- request_owner is the order's buyer, '' for an anonymous order (a NULL user_id would
-- never collide, and anonymous retries must). request_id leads the key, so that the ids
-- the shop makes (UUIDv7, time first) still go to the index's right edge.
ALTER TABLE order_info ADD COLUMN request_owner varchar(64) CHARACTER SET ascii COLLATE ascii_bin
  AS (IFNULL(user_id, '')) STORED;
CREATE UNIQUE INDEX uk_order_info_request_owner ON order_info (request_id, request_owner);
DROP INDEX uk_order_info_request_id ON order_info;
