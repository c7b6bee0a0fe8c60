package migrations_test

import (
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/migrations"
)

func TestStatements(t *testing.T) {
	var stmts []string
	for _, v := range migrations.Versions() {
		stmts = append(stmts, migrations.Statements(v.SQL)...)
	}
	wantPrefixes := []string{
		"CREATE TABLE IF NOT EXISTS goods_stock",
		"CREATE TABLE IF NOT EXISTS order_info",
		"INSERT INTO goods_stock",
		"ALTER TABLE goods_stock ADD COLUMN fence",
		"CREATE INDEX idx_goods_stock_goods_no",
		"ALTER TABLE order_info ADD COLUMN status varchar(16) NOT NULL DEFAULT 'paid'",
		"ALTER TABLE order_info ALTER COLUMN status SET DEFAULT 'unpaid'",
		"ALTER TABLE order_info ADD COLUMN paid_at",
		"ALTER TABLE order_info ADD COLUMN expired_at",
		"CREATE INDEX idx_order_info_status_created",
		"ALTER TABLE order_info MODIFY request_id varchar(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL",
		"ALTER TABLE order_info ADD COLUMN user_id",
		"ALTER TABLE order_info ADD COLUMN buyer_limited",
		"ALTER TABLE order_info ADD COLUMN active_buyer",
		"CREATE UNIQUE INDEX uk_order_info_goods_buyer",
		"ALTER TABLE goods_stock ADD COLUMN sale_start",
		"ALTER TABLE goods_stock ADD COLUMN sale_end",
		"DROP INDEX idx_order_info_goods_no ON order_info",
		"CREATE TABLE IF NOT EXISTS stock_lease (",
		"ALTER TABLE stock_lease ADD COLUMN wanted",
		"ALTER TABLE order_info ADD COLUMN request_owner",
		"CREATE UNIQUE INDEX uk_order_info_request_owner ON order_info (request_id, request_owner)",
		"DROP INDEX uk_order_info_request_id ON order_info",
		"CREATE TABLE IF NOT EXISTS room_key (",
		"CREATE TABLE IF NOT EXISTS room_horizon (",
		"CREATE TABLE IF NOT EXISTS room_member (",
		"CREATE TABLE IF NOT EXISTS deployment (",
		"INSERT IGNORE INTO deployment (id, identity) VALUES (1, UUID())",
		"ALTER TABLE room_horizon ADD COLUMN is_open",
		"CREATE INDEX idx_room_horizon_open ON room_horizon (is_open, latest)",
		"ALTER TABLE stock_lease ADD COLUMN waiting varchar",
		"ALTER TABLE stock_lease ADD COLUMN waiting_at",
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
