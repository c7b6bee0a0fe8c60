// Package migrations ships the schema as versions, embedded so that `shop
// migrate` needs no files beside the binary, and applies them with goose.
package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"embed"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
)

// files holds the schema's versions. A shipped file is never edited: a
// change is a new file and a new version in versions. The file names keep the
// order of the versions, for anyone who feeds them to MySQL by hand.
//
//go:embed *.sql
var files embed.FS

// versions are the schema's versions, oldest first.
var versions = []struct {
	version int64
	file    string
}{
	{1, "goods_stock.sql"},
	{2, "goods_stock_v2_fence.sql"},
	{3, "goods_stock_v3_order_status.sql"},
	{4, "goods_stock_v4_request_id_bin.sql"},
	{5, "goods_stock_v5_buyers_and_window.sql"},
	{6, "goods_stock_v6_drop_goods_index.sql"},
	{7, "goods_stock_v7_stock_lease.sql"},
	{8, "goods_stock_v8_lease_wanted.sql"},
	{9, "goods_stock_v9_request_id_per_buyer.sql"},
	{10, "goods_stock_v10_waiting_room.sql"},
	{11, "goods_stock_v11_deployment.sql"},
	{12, "goods_stock_v12_room_open_index.sql"},
	{13, "goods_stock_v13_lease_waiting.sql"},
}

// Version is one version of the schema.
type Version struct {
	Version int64
	File    string
	SQL     string
}

// Versions returns the schema's versions in order.
func Versions() []Version {
	out := make([]Version, len(versions))
	for i, v := range versions {
		b, err := files.ReadFile(v.file)
		if err != nil {
			panic(err) // embedded at build time: cannot happen
		}
		out[i] = Version{v.version, v.file, string(b)}
	}
	return out
}

// Statements returns the SQL statements of a version's file, in order,
// without comments.
func Statements(file string) []string {
	var out []string
	for _, stmt := range strings.Split(stripComments(file), ";") {
		if s := strings.TrimSpace(stmt); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// MySQL's answers to a column or an index added twice, and to an index
// dropped twice.
const (
	erDupFieldName       = 1060
	erDupKeyName         = 1061
	erCantDropFieldOrKey = 1091
)

// NewProvider returns goose's migration provider for db (MySQL), with the
// schema's versions and goose's version table, goose_db_version.
//
// A database made before the versions were tracked (by the shop's earlier
// releases, which ran every file on every start) has no version table: goose
// then applies every version from the first. That is safe: version 1 creates
// only what is missing, a column or index that a version adds but the
// database has already counts as added, and one it drops that is gone
// counts as dropped. The same makes a version that was cut
// off halfway (MySQL cannot undo DDL) complete when it runs again.
func NewProvider(db *sql.DB, log *slog.Logger) (*goose.Provider, error) {
	var ms []*goose.Migration
	for _, v := range Versions() {
		stmts := Statements(v.SQL)
		ms = append(ms, goose.NewGoMigration(v.Version, &goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error {
			for _, stmt := range stmts {
				_, err := db.ExecContext(ctx, stmt)
				var me *mysql.MySQLError
				if errors.As(err, &me) && (me.Number == erDupFieldName || me.Number == erDupKeyName || me.Number == erCantDropFieldOrKey) {
					continue // added (or dropped) before: see above
				}
				if err != nil {
					return fmt.Errorf("%s: %w", v.File, err)
				}
			}
			return nil
		}}, nil))
	}
	opts := []goose.ProviderOption{goose.WithGoMigrations(ms...), goose.WithDisableGlobalRegistry(true)}
	if log != nil {
		opts = append(opts, goose.WithSlog(log))
	}
	return goose.NewProvider(goose.DialectMySQL, db, nil, opts...)
}

// stripComments drops whole-line "--" comments; the schema has no others.
func stripComments(sql string) string {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}
