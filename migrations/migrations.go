// Package migrations ships the schema, embedded so that `shop migrate` needs
// no files beside the binary.
package migrations

import (
	_ "embed" // for go:embed
	"strings"
)

// The schema's versions, oldest first. A shipped file is never edited: a
// change is a new file. Compose's MySQL runs them in file-name order on a new
// database, which is this order too (also where a locale ignores the punctuation).
var (
	//go:embed goods_stock.sql
	goodsStock string
	//go:embed goods_stock_v2_fence.sql
	goodsStockFence string
)

// Statements returns the schema's SQL statements in order, without comments.
func Statements() []string {
	var out []string
	for _, file := range []string{goodsStock, goodsStockFence} {
		for _, stmt := range strings.Split(stripComments(file), ";") {
			if s := strings.TrimSpace(stmt); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
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
