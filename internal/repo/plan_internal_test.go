package repo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// A payment and a sweep lock order rows by primary key, so they never
// deadlock; once they did, when the optimizer took the status index for the
// payment on a small table. The plans are pinned here with EXPLAIN of the
// statements themselves, on a table where the status index is the tempting
// choice (one unpaid order among many paid ones). Fails when the payment's
// FORCE INDEX goes, or the sweep's locking read stops going by id.
func TestOrderLocksAreTakenByPrimaryKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openMigrated(ctx, t)
	db := s.db.WithContext(ctx)
	for i := range 200 {
		status := service.OrderPaid
		if i == 100 {
			status = service.OrderUnpaid
		}
		if err := db.Exec("INSERT INTO order_info (goods_no, request_id, status, created_at) VALUES (1, ?, ?, NOW(6))",
			fmt.Sprint("plan-", i), status).Error; err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Exec("ANALYZE TABLE order_info").Error; err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		name string
		sql  string
		args []any
	}{
		{"the payment", payOrderSQL, []any{service.OrderPaid, time.Now(), 101, service.OrderUnpaid, time.Time{}}},
		{"the sweep's locking read", lockOrdersSQL, []any{[]uint64{3, 101, 150}}},
	} {
		var plan []map[string]any
		if err := db.Raw("EXPLAIN "+q.sql, q.args...).Scan(&plan).Error; err != nil {
			t.Fatalf("EXPLAIN %s: %v", q.name, err)
		}
		for _, row := range plan {
			if key := fmt.Sprint(row["key"]); key != "PRIMARY" {
				t.Errorf("%s takes its row locks through %s, not PRIMARY (%v): it can deadlock with the other", q.name, key, row)
			}
		}
		if len(plan) == 0 {
			t.Errorf("EXPLAIN %s: no plan", q.name)
		}
	}
}
