package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// The service owns a sale's transaction: the interfaces it declares for
// the store (the *Store and *Sale interfaces) take and give data, never a
// function of the service's to run inside the store's transaction. A
// function parameter (or a Decide) crossing that boundary is the repo
// calling back into the service mid-transaction, which neither a reader
// nor a tool can follow.
func TestTheStoreTakesNoFunctionOfTheService(t *testing.T) {
	found, checked := callbacks(t, serviceSources(t))
	for _, m := range found {
		t.Errorf("%s takes a function of the service's: the store would run service code inside its transaction", m)
	}
	for _, want := range []string{"SeedStore", "BatchStore", "AllotStore", "Sale", "BatchSale", "GrantSale"} {
		if !slices.Contains(checked, want) {
			t.Fatalf("checked the interfaces %v: want %s among them", checked, want)
		}
	}
}

// The rule catches a store method with a function parameter, and one with
// a Decide.
func TestTheBoundaryRuleCatchesACallback(t *testing.T) {
	for _, src := range []string{
		"package service\ntype FooStore interface { Sell(ctx context.Context, guard func() error) error }\n",
		"package service\ntype FooStore interface { Sell(ctx context.Context, d Decide) error }\n",
	} {
		found, _ := callbacks(t, map[string]string{"foo.go": src})
		if !slices.Equal(found, []string{"FooStore.Sell"}) {
			t.Errorf("%q: found %v, want FooStore.Sell", src, found)
		}
	}
}

// callbacks parses files (a package's sources by name) and returns the
// methods of its store interfaces (named *Store or *Sale) that take a
// function or a Decide, as Interface.Method, and the interfaces checked.
func callbacks(t *testing.T, files map[string]string) (found, checked []string) {
	t.Helper()
	fset := token.NewFileSet()
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			it, ok := ts.Type.(*ast.InterfaceType)
			if !ok || !strings.HasSuffix(ts.Name.Name, "Store") && !strings.HasSuffix(ts.Name.Name, "Sale") {
				return true
			}
			checked = append(checked, ts.Name.Name)
			for _, m := range it.Methods.List {
				fn, ok := m.Type.(*ast.FuncType)
				if !ok || len(m.Names) == 0 {
					continue
				}
				for _, p := range fn.Params.List {
					if isCallback(p.Type) {
						found = append(found, fmt.Sprintf("%s.%s", ts.Name.Name, m.Names[0].Name))
						break
					}
				}
			}
			return false
		})
	}
	slices.Sort(found)
	return slices.Compact(found), checked
}

func isCallback(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.FuncType:
		return true
	case *ast.Ident:
		return e.Name == "Decide"
	}
	return false
}
