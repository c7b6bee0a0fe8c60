-- Version 2 (after goods_stock.sql): fencing. fence is the fencing token (the lock
-- node's create zxid) of the last sale made under the ZooKeeper lock. A purchase under
-- the lock first claims the goods' row, in the same transaction as its read and write:
--   SELECT ... FROM goods_stock WHERE goods_no = ? ... FOR UPDATE
-- which waits for an earlier holder's transaction still in flight, and refuses the sale
-- when fence is above its token (a newer holder has written); the sale writes its token
-- into fence with the stock. The seed's columns stay as they are.
-- `shop migrate` treats "duplicate column" and "duplicate key" as already applied.
ALTER TABLE goods_stock ADD COLUMN fence bigint NOT NULL DEFAULT 0;

-- The claim and the read find the row by goods_no; without an index InnoDB would
-- lock every row of the table it scans, serialising unrelated goods.
CREATE INDEX idx_goods_stock_goods_no ON goods_stock (goods_no);
