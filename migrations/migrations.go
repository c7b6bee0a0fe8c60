// Package migrations ships the schema, embedded so that `shop migrate` needs
// no files beside the binary.
package migrations

import (
	_ "embed" // for go:embed
	"strings"
)

//go:embed goods_stock.sql
var goodsStock string

// Statements returns the schema's SQL statements in order, without comments.
func Statements() []string {
	var out []string
	for _, stmt := range strings.Split(stripComments(goodsStock), ";") {
		if s := strings.TrimSpace(stmt); s != "" {
			out = append(out, s)
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
