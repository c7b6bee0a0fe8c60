-- Version 6: one index fewer for every order written. The one-per-buyer unique key of
-- version 5 begins with goods_no, so it serves every lookup by goods (counts, the sampler,
-- clearing a goods' orders) that idx_order_info_goods_no served; keeping both cost each
-- INSERT a second entry keyed by goods, and a sale of many goods those entries in as many
-- places of the index as it has goods.
DROP INDEX idx_order_info_goods_no ON order_info;
