package repo_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/migrations"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// Databases made by earlier releases, which ran the schema files on every
// start and kept no version table, upgrade in place and keep their rows:
// one with the first version only, one with the fence too, one with order
// states. Orders placed before order states were final sales: they become
// paid, never expired by a sweeper.
func TestMigrateUpgradesDatabasesOfEarlierReleases(t *testing.T) {
	for _, upTo := range []int64{1, 2, 3} {
		t.Run(fmtVersion(upTo), func(t *testing.T) {
			ctx := context.Background()
			dsn := e2e.Database(t)
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, v := range migrations.Versions() {
				if v.Version > upTo {
					break
				}
				for _, stmt := range migrations.Statements(v.SQL) {
					if _, err := db.Exec(stmt); err != nil {
						t.Fatalf("%.40s: %v", stmt, err)
					}
				}
			}
			if _, err := db.Exec("UPDATE goods_stock SET stock = 77"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("INSERT INTO order_info (goods_no, request_id) VALUES (1, 'old-order')"); err != nil {
				t.Fatal(err)
			}

			s := openMigrated(t, dsn)
			if applied, err := s.Migrate(ctx); err != nil || len(applied) != 0 {
				t.Fatalf("second migrate applied %v (%v), want nothing", applied, err)
			}
			states, err := s.MigrationStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var versions []int64
			for _, st := range states {
				if !st.Applied {
					t.Errorf("version %d (%s) pending after migrate", st.Version, st.File)
				}
				versions = append(versions, st.Version)
			}
			var want []int64
			for _, v := range migrations.Versions() {
				want = append(want, v.Version)
			}
			if !slices.Equal(versions, want) {
				t.Errorf("versions %v, want every version, %v", versions, want)
			}
			assertState(t, s, 77, 1)
			old, found, err := s.OrderByRequestID(ctx, service.RequestKey{RequestID: "old-order"})
			wantStatus := service.OrderPaid // placed before orders could expire: a final sale
			if upTo >= 3 {
				wantStatus = service.OrderUnpaid // placed with the life cycle: unpaid until paid
			}
			if err != nil || !found || old.Status != wantStatus {
				t.Fatalf("the old order: %+v found=%v err=%v, want it kept and %s", old, found, err, wantStatus)
			}
			o := &service.Order{GoodsNo: 1, RequestID: "new"}
			if err := sellFenced(ctx, s, 1, 1, o, minusOne, noGuard); err != nil {
				t.Fatal(err)
			}
			if o.Status != service.OrderUnpaid {
				t.Errorf("a new order is %q, want unpaid", o.Status)
			}
			assertState(t, s, 76, 2)
		})
	}
}

func fmtVersion(v int64) string { return fmt.Sprintf("from version %d", v) }
