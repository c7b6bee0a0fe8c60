package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// sample reads, every second until ctx ends, the stock and orders of the
// goods the metrics track and, with the lock on, how many nodes queue on
// each one's lock: the gauges and the dashboard's numbers, so that neither
// a scrape nor the page ever queries on a buyer's path.
func sample(ctx context.Context, shop *service.Shop, zc *zklock.Client, queues bool, l coord.Paths, m *metrics.Metrics, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for _, goods := range m.Goods() {
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			info, err := shop.Stock(qctx, goods)
			cancel()
			if err == nil {
				m.SampledGoods(goods, metrics.GoodsSample{Stock: info.Stock, Orders: info.Orders, OrdersByStatus: info.OrdersByStatus})
			} else if ctx.Err() == nil && !errors.Is(err, service.ErrNotFound) {
				log.Debug("sampling the stock failed", "goodsNo", goods, "err", err)
			}
			if queues {
				p := l.Path(goods)
				qctx, cancel := context.WithTimeout(ctx, time.Second)
				kids, err := zc.Children(qctx, p)
				cancel()
				if err == nil || errors.Is(err, zk.ErrNoNode) { // no node yet: nobody queued
					m.SampledQueue(goods, p, len(kids))
				}
			}
		}
		sampleSale(ctx, shop, m, log)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// sampleSale samples the sale across goods: the totals (one scan of the
// goods) and the stock of the goods purchased most in the last second.
func sampleSale(ctx context.Context, shop *service.Shop, m *metrics.Metrics, log *slog.Logger) {
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	totals, err := shop.SaleTotals(qctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Debug("sampling the sale failed", "err", err)
		}
		return
	}
	s := metrics.SaleSample{Goods: totals.Goods, SoldOut: totals.SoldOut, StockLeft: totals.StockLeft, Hottest: m.TakeDemand(5)}
	for i, h := range s.Hottest {
		if g, err := shop.Goods(qctx, h.GoodsNo); err == nil {
			s.Hottest[i].Stock = g.Stock
		}
	}
	m.SampledSale(s)
}
