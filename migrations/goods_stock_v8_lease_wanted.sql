-- Version 8: a lease can be asked for its stock (purchase.strategy=allot). An instance
-- whose buyers find a goods' row out of stock while other open leases hold some of it
-- unsold appends the goods to those leases' wanted list (",goodsNo", repeated while its
-- buyers wait); the owner reads and clears it, and gives such goods back once its own
-- buyers leave them idle, where it keeps the others longer.
ALTER TABLE stock_lease ADD COLUMN wanted varchar(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';
