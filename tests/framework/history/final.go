package history

import (
	"context"
	"database/sql"
	"fmt"
)

// ReadFinal reads the database after a sale through db (opened with
// parseTime): every goods' stock and every order, in one snapshot (the
// sweeper may still be expiring orders: a stock read before a sweep and
// orders read after it would be a state the shop never was in).
func ReadFinal(ctx context.Context, db *sql.DB) (Final, error) {
	f := Final{Stock: map[int32]int32{}}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return f, fmt.Errorf("read the final rows: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, "SELECT goods_no, stock FROM goods_stock")
	if err != nil {
		return f, fmt.Errorf("read the stock: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g, stock int32
		if err := rows.Scan(&g, &stock); err != nil {
			return f, err
		}
		f.Stock[g] = stock
	}
	if err := rows.Err(); err != nil {
		return f, err
	}
	orders, err := tx.QueryContext(ctx, "SELECT id, goods_no, request_id, status, created_at, paid_at, expired_at FROM order_info ORDER BY id")
	if err != nil {
		return f, fmt.Errorf("read the orders: %w", err)
	}
	defer orders.Close()
	for orders.Next() {
		var r Row
		var paidAt, expiredAt sql.NullTime
		if err := orders.Scan(&r.ID, &r.Goods, &r.RequestID, &r.Status, &r.CreatedAt, &paidAt, &expiredAt); err != nil {
			return f, err
		}
		if paidAt.Valid {
			r.PaidAt = &paidAt.Time
		}
		if expiredAt.Valid {
			r.ExpiredAt = &expiredAt.Time
		}
		f.Orders = append(f.Orders, r)
	}
	return f, orders.Err()
}
