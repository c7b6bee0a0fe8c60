-- Version 13: a lease says who waits at its instance (purchase.strategy=allot). With each
-- batch, an instance writes per goods how many of its buyers wait in its queue and when the
-- earliest and the latest of them arrived ("goodsNo:firstMicros:lastMicros:count", comma
-- separated), and when it wrote that by the server's clock. A grant that would leave a goods' row nearly empty reads
-- the other open leases' fresh lists and keeps back the pieces their earlier buyers wait for.
ALTER TABLE stock_lease ADD COLUMN waiting varchar(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';
ALTER TABLE stock_lease ADD COLUMN waiting_at datetime(6) NULL;
