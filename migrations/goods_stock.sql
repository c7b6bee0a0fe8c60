-- seckill-zk schema. Idempotent: `shop migrate` runs it on every start of the demo.

-- The Spring seed's table, exactly (note the camelCase isActive column).
CREATE TABLE IF NOT EXISTS goods_stock (
  id int unsigned NOT NULL AUTO_INCREMENT,
  goods_no int NOT NULL,
  stock int DEFAULT NULL,
  isActive smallint DEFAULT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- One row per successful purchase, so that overselling is counted, not guessed:
-- oversold = orders - (stock before - stock after).
CREATE TABLE IF NOT EXISTS order_info (
  id bigint unsigned NOT NULL AUTO_INCREMENT,
  goods_no int NOT NULL,
  request_id varchar(64) NOT NULL,
  created_at datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uk_order_info_request_id (request_id),
  KEY idx_order_info_goods_no (goods_no)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The seed's goods: number 1, stock 100. Inserted once; `shop stock set` resets it.
INSERT INTO goods_stock (goods_no, stock, isActive)
SELECT 1, 100, 1 FROM DUAL
WHERE NOT EXISTS (SELECT 1 FROM goods_stock WHERE goods_no = 1);
