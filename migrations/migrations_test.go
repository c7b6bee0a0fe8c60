package migrations_test

import (
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/migrations"
)

func TestStatements(t *testing.T) {
	stmts := migrations.Statements()
	wantPrefixes := []string{
		"CREATE TABLE IF NOT EXISTS goods_stock",
		"CREATE TABLE IF NOT EXISTS order_info",
		"INSERT INTO goods_stock",
		"ALTER TABLE goods_stock ADD COLUMN fence",
		"CREATE INDEX idx_goods_stock_goods_no",
	}
	if len(stmts) != len(wantPrefixes) {
		t.Fatalf("%d statements, want %d: %q", len(stmts), len(wantPrefixes), stmts)
	}
	for i, p := range wantPrefixes {
		if !strings.HasPrefix(stmts[i], p) {
			t.Errorf("statement %d starts %.40q, want %q", i, stmts[i], p)
		}
		if strings.Contains(stmts[i], "--") {
			t.Errorf("statement %d still has a comment", i)
		}
	}
	// The seed's table, exactly: the camelCase column included.
	if !strings.Contains(stmts[0], "isActive smallint") || !strings.Contains(stmts[0], "id int unsigned NOT NULL AUTO_INCREMENT") {
		t.Errorf("goods_stock differs from the seed's: %s", stmts[0])
	}
}
