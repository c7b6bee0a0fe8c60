-- Version 7: stock allotted to instances (purchase.strategy=allot). An instance opens a
-- lease, named by an ephemeral ZooKeeper node of its session, takes stock of goods from
-- goods_stock into it, and sells from it with one write of this row per batch of orders.
-- allotted lists, per goods, the stock granted to the lease and how much of it was sold:
-- "goodsNo:granted:sold" entries, comma separated. A lease whose node is gone is closed by
-- any instance (open = 0), which puts back into goods_stock what it granted and did not
-- sell; a batch of the closed lease's owner then writes nothing.
CREATE TABLE IF NOT EXISTS stock_lease (
  id bigint unsigned NOT NULL AUTO_INCREMENT,
  node varchar(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  open tinyint NOT NULL DEFAULT 1,
  batches bigint NOT NULL DEFAULT 0,
  allotted mediumtext CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at datetime(6) NOT NULL,
  PRIMARY KEY (id),
  KEY idx_stock_lease_open (open)
) ENGINE=InnoDB;
