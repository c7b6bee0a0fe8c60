-- Version 3: orders that expire. An order is placed 'unpaid' with the stock it took;
-- it becomes 'paid' (POST /orders/{id}/pay) or, unpaid past orders.payTimeout,
-- 'expired' by the elected sweeper, which returns its piece to the stock in the
-- same transaction. Both changes are conditional on status = 'unpaid', so exactly
-- one of them happens to an order, once.
-- Orders placed before this version were final sales: they become 'paid', so that
-- no sweeper returns stock they took long ago. New orders are inserted 'unpaid'.
ALTER TABLE order_info ADD COLUMN status varchar(16) NOT NULL DEFAULT 'paid';
ALTER TABLE order_info ALTER COLUMN status SET DEFAULT 'unpaid';
ALTER TABLE order_info ADD COLUMN paid_at datetime(6) NULL;
ALTER TABLE order_info ADD COLUMN expired_at datetime(6) NULL;

-- The sweeper's query: unpaid orders by age.
CREATE INDEX idx_order_info_status_created ON order_info (status, created_at);
