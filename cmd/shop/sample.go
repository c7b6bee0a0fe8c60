package main

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
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
// a scrape nor the page ever queries on a buyer's path. A round costs two
// SQL reads for every tracked goods together and one listing per lock
// path, however many goods share it: at 32 tracked goods of one path, a
// read and a listing per goods cost the two instances of a 200-goods sale
// about 60 ms of CPU a second (shops, MariaDB and ZooKeeper together).
func sample(ctx context.Context, shop *service.Shop, zc *zklock.Client, queues bool, l coord.Paths, m *metrics.Metrics, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		goods := m.Goods()
		sampleStocks(ctx, shop, goods, m, log)
		if queues {
			sampleQueues(ctx, zc.Children, l, goods, m)
		}
		sampleSale(ctx, shop, m, log)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// sampleStocks samples the stock and the orders of goods.
func sampleStocks(ctx context.Context, shop *service.Shop, goods []int32, m *metrics.Metrics, log *slog.Logger) {
	if len(goods) == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	infos, err := shop.Stocks(qctx, goods)
	if err != nil {
		if ctx.Err() == nil {
			log.Debug("sampling the stock failed", "goods", len(goods), "err", err)
		}
		return
	}
	for _, no := range goods {
		if info, ok := infos[no]; ok {
			m.SampledGoods(no, metrics.GoodsSample{Stock: info.Stock, Orders: info.Orders, OrdersByStatus: info.OrdersByStatus})
		}
	}
}

// sampleQueues samples how many nodes queue on the lock of each of goods:
// one listing (list: ZooKeeper's children) per lock path.
func sampleQueues(ctx context.Context, list func(ctx context.Context, path string) ([]string, error), l coord.Paths, goods []int32, m *metrics.Metrics) {
	byPath := map[string][]int32{}
	var paths []string
	for _, no := range goods {
		p := l.Path(no)
		if _, ok := byPath[p]; !ok {
			paths = append(paths, p)
		}
		byPath[p] = append(byPath[p], no)
	}
	for _, p := range paths {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		kids, err := list(qctx, p)
		cancel()
		if err == nil || errors.Is(err, zk.ErrNoNode) { // no node yet: nobody queued
			for _, no := range byPath[p] {
				m.SampledQueue(no, p, len(kids))
			}
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

// watchCoordination checks, every 5 s until ctx ends, that the shop's
// ZooKeeper paths are still its own (one deleted is made again) and how many
// instances queue in the election, and exports both (CoordinationStats).
// A round costs two reads a path and, with an election, one listing.
func watchCoordination(ctx context.Context, roots *coord.Roots, e *coord.Election, m *metrics.Metrics) {
	var participants atomic.Int64
	participants.Store(-1)
	m.CoordinationStats(func() metrics.Coordination {
		c := metrics.Coordination{NoAuth: roots.Refused(), Electing: e != nil, Participants: int(participants.Load())}
		if roots.Open() {
			c.PathsOpen = coord.OpenWarning
		}
		if err := roots.Err(ctx); err != nil {
			c.PathsProblem = err.Error()
		}
		if e != nil {
			if err := e.Check(ctx); err != nil {
				c.ElectionErr = err.Error()
			}
		}
		return c
	})
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		roots.Recheck(qctx)
		if e != nil {
			n, err := e.Participants(qctx)
			if err != nil {
				n = -1 // unknown
			}
			participants.Store(int64(n))
		}
		cancel()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
