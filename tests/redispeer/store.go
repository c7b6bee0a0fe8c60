package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// order is a sold piece: the shop's order_info row, unpaid.
type order struct {
	goodsNo   int32
	requestID string
	createdAt time.Time
}

// store writes the peer's orders into the shop's tables.
type store struct{ db *sql.DB }

func openStore(cfg *mysql.Config) (*store, error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	// The shop's sale pool's default (mysql.saleConns).
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	return &store{db: db}, nil
}

func (s *store) close() { s.db.Close() }

// stocks is every goods' stock (its first row's, as the shop reads it).
func (s *store) stocks(ctx context.Context) (map[int32]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT goods_no, stock FROM goods_stock WHERE stock IS NOT NULL ORDER BY goods_no, id DESC")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int32]int64{}
	for rows.Next() {
		var g int32
		var n int64
		if err := rows.Scan(&g, &n); err != nil {
			return nil, err
		}
		out[g] = n // the last, by id descending, is the first row
	}
	return out, rows.Err()
}

const insertOrders = "INSERT INTO order_info (goods_no, request_id, status, created_at) VALUES "

// sell writes one order and its goods' decrement in one transaction, in
// one packet, and returns the order's id.
func (s *store) sell(ctx context.Context, o order) (uint64, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "START TRANSACTION; "+insertOrders+"(?, ?, 'unpaid', ?); "+
		"UPDATE goods_stock SET stock = stock - 1 WHERE goods_no = ? ORDER BY id LIMIT 1; SELECT LAST_INSERT_ID(); COMMIT",
		o.goodsNo, o.requestID, o.createdAt, o.goodsNo)
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return 0, err
	}
	defer rows.Close()
	var id uint64
	if !rows.Next() {
		return 0, errors.Join(errors.New("no order id"), rows.Err())
	}
	if err := rows.Scan(&id); err != nil {
		return 0, err
	}
	// The COMMIT's result follows the SELECT's rows.
	for rows.NextResultSet() {
	}
	return id, rows.Err()
}

// sellBatch writes orders and each goods' decrement in one transaction.
func (s *store) sellBatch(ctx context.Context, orders []order) error {
	var q strings.Builder
	q.WriteString("START TRANSACTION; " + insertOrders)
	args := make([]any, 0, 3*len(orders)+8)
	perGoods := map[int32]int{}
	for i, o := range orders {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, 'unpaid', ?)")
		args = append(args, o.goodsNo, o.requestID, o.createdAt)
		perGoods[o.goodsNo]++
	}
	goods := make([]int32, 0, len(perGoods))
	for g := range perGoods {
		goods = append(goods, g)
	}
	sort.Slice(goods, func(i, j int) bool { return goods[i] < goods[j] }) // one lock order for every writer
	for _, g := range goods {
		q.WriteString("; UPDATE goods_stock SET stock = stock - ? WHERE goods_no = ? ORDER BY id LIMIT 1")
		args = append(args, perGoods[g], g)
	}
	q.WriteString("; COMMIT")
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, q.String(), args...); err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	return nil
}

// writer is the async design's background writer: it takes what is queued,
// up to writeMax orders at a time, and writes it in one transaction.
type writer struct {
	store *store
	log   *slog.Logger

	mu      sync.Mutex
	queue   []order
	wake    chan struct{}
	closing bool
	done    chan struct{}
	lost    int // orders whose writes failed past the retries
}

const writeMax = 500

func newWriter(s *store, log *slog.Logger) *writer {
	w := &writer{store: s, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *writer) enqueue(o order) {
	w.mu.Lock()
	w.queue = append(w.queue, o)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		batch := w.queue[:min(len(w.queue), writeMax)]
		w.queue = w.queue[len(batch):]
		closing := w.closing
		w.mu.Unlock()
		if len(batch) == 0 {
			if closing {
				return
			}
			<-w.wake
			continue
		}
		var err error
		for attempt := range 5 {
			if err = w.store.sellBatch(context.Background(), batch); err == nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
		}
		if err != nil {
			w.mu.Lock()
			w.lost += len(batch)
			w.mu.Unlock()
			w.log.Error("orders lost: the writer could not write them", "orders", len(batch), "err", err)
		}
	}
}

// close writes what is queued and stops the writer.
func (w *writer) close(ctx context.Context) error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return fmt.Errorf("the writer did not drain: %w", ctx.Err())
	}
	if w.lost > 0 {
		return fmt.Errorf("%d orders lost", w.lost)
	}
	return nil
}
