-- Version 2 (after goods_stock.sql): fencing. A purchase under the ZooKeeper lock first claims the goods'
-- row with its lock's fencing token (the lock node's create zxid), in the same
-- transaction as its read and its write:
--   UPDATE goods_stock SET fence = <token> WHERE goods_no = ? AND fence <= <token>
-- The claim waits for an earlier holder's transaction still in flight, and matches
-- nothing once a newer holder has written: a holder whose lock passed on while it
-- was paused then writes nothing. The seed's columns stay as they are.
-- `shop migrate` treats "duplicate column" and "duplicate key" as already applied.
ALTER TABLE goods_stock ADD COLUMN fence bigint NOT NULL DEFAULT 0;

-- The claim and the read find the row by goods_no; without an index InnoDB would
-- lock every row of the table it scans, serialising unrelated goods.
CREATE INDEX idx_goods_stock_goods_no ON goods_stock (goods_no);
