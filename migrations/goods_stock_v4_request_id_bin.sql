-- Version 4: request ids compared exactly. The purchase's idempotency key,
-- order_info.request_id, had the table's case-insensitive collation, so ids that
-- differ only in case (dup-1, DUP-1), both valid, were refused as one. The alphabet
-- of an id is A-Za-z0-9._:- (the handler refuses anything else), so ASCII with a
-- binary collation holds every id there can be, and its unique key compares bytes.
ALTER TABLE order_info MODIFY request_id varchar(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;
