package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// All lists every code the package declares, once.
func TestAllListsEveryCode(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				code, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, code)
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("found no code in codes.go")
	}
	for _, c := range declared {
		if !slices.Contains(All, c) {
			t.Errorf("%q is declared but not in All", c)
		}
	}
	if len(All) != len(declared) {
		t.Errorf("All has %d codes, codes.go declares %d", len(All), len(declared))
	}
}
