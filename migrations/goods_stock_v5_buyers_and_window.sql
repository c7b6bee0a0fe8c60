-- Version 5: who buys, and when. An order may carry the buyer's id (X-User-ID). With
-- purchase.onePerBuyer an order is "limited": the database keeps one such order per goods
-- and buyer among the orders that are not expired, through a unique key on a stored
-- generated column that is the buyer id while the order is limited and not expired, NULL
-- otherwise (NULLs never collide): safe across instances and under every strategy, and an
-- expired order frees its buyer to buy again.
ALTER TABLE order_info ADD COLUMN user_id varchar(64) CHARACTER SET ascii COLLATE ascii_bin NULL;
ALTER TABLE order_info ADD COLUMN buyer_limited tinyint NOT NULL DEFAULT 0;
ALTER TABLE order_info ADD COLUMN active_buyer varchar(64) CHARACTER SET ascii COLLATE ascii_bin
  AS (IF(buyer_limited = 1 AND status <> 'expired', user_id, NULL)) STORED;
CREATE UNIQUE INDEX uk_order_info_goods_buyer ON order_info (goods_no, active_buyer);

-- The sale window: NULL is open on that side. Purchases before sale_start are refused
-- (409 not_started), at or after sale_end too (409 ended).
ALTER TABLE goods_stock ADD COLUMN sale_start datetime(6) NULL;
ALTER TABLE goods_stock ADD COLUMN sale_end datetime(6) NULL;
