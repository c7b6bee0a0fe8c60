package repo

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The instances' read of the open rooms, twenty a second each, reads the
// open rows alone, however many closed rooms the table holds: by the
// index idx_room_horizon_open (schema version 12). Before, latest >
// horizon compared two columns, which no index serves, and every read
// scanned every row (#75 item 3).
func TestTheOpenRoomsAreReadByTheirIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openMigrated(ctx, t)
	const closed, open = 3000, 3
	var rows []string
	for g := range closed + open {
		latest := 100
		if g < open {
			latest = 200 // beyond the horizon: a queue still open
		}
		rows = append(rows, fmt.Sprintf("(%d, 150, %d)", g+1, latest))
	}
	if err := s.db.WithContext(ctx).Exec("INSERT INTO room_horizon (goods_no, horizon, latest) VALUES " + strings.Join(rows, ",")).Error; err != nil {
		t.Fatal(err)
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(ctx) // the session's counters are this connection's
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := handlerReads(ctx, t, conn)
	got, err := conn.QueryContext(ctx, horizonsQuery)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for got.Next() {
		n++
	}
	if err := got.Close(); err != nil {
		t.Fatal(err)
	}
	read := handlerReads(ctx, t, conn) - before
	if n != open {
		t.Fatalf("the read found %d open rooms, want %d", n, open)
	}
	if read > 10*open {
		t.Errorf("the read of %d open rooms among %d read %d rows: a scan, not the index", open, closed+open, read)
	}
}
