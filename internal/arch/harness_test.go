package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// serverPrograms are what starts a server a test runs against: the stack
// script (up, galera, ensemble, mariadb) and the servers themselves.
var serverPrograms = []string{"stack.sh", "mariadbd", "mysqld", "zkServer", "zookeeper", "redis-server"}

// Only the harness (tests/framework/e2e) starts the servers tests run
// against: no other test runs scripts/stack.sh (but for `stack.sh tls`,
// which makes certificates) or a server's program. One place knows how a
// server starts, where its state goes and how it is killed and cleaned up.
func TestOnlyTheHarnessStartsServers(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := walkGo(root, true, func(p string) error {
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(filepath.ToSlash(rel), "tests/framework/e2e/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, s := range serverStarts(f) {
			t.Errorf("%s runs %s: start servers through the harness (tests/framework/e2e)", rel, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d test files: the walk lost them", files)
	}
}

// The rule catches a test that starts a server itself.
func TestTheHarnessRuleCatchesAServerStartedElsewhere(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{`exec.Command("../../scripts/stack.sh", "galera", dir)`, true},
		{`exec.CommandContext(ctx, filepath.Join(root, "scripts/stack.sh"), "ensemble", dir)`, true},
		{`exec.Command("/usr/sbin/mariadbd", "--datadir", dir)`, true},
		{`exec.Command("../../scripts/stack.sh", "tls", dir)`, false},
		{`exec.Command("taskset", "-c", "1", "sh")`, false},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x_test.go", "package x\nfunc f() { _ = "+c.src+" }\n", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(serverStarts(f)) > 0; got != c.want {
			t.Errorf("%s: caught %t, want %t", c.src, got, c.want)
		}
	}
}

// serverStarts are the calls of f that run a server's program or the stack
// script (but for its tls command), as text.
func serverStarts(f *ast.File) []string {
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || pkg.Name != "exec" || (sel.Sel.Name != "Command" && sel.Sel.Name != "CommandContext") {
			return true
		}
		at := 0
		if sel.Sel.Name == "CommandContext" {
			at = 1
		}
		if len(call.Args) <= at {
			return true
		}
		prog := literals(call.Args[at])
		server := slices.ContainsFunc(prog, func(s string) bool {
			return slices.ContainsFunc(serverPrograms, func(p string) bool { return strings.Contains(s, p) })
		})
		if !server {
			return true
		}
		if len(call.Args) > at+1 && slices.Equal(literals(call.Args[at+1]), []string{"tls"}) && slices.ContainsFunc(prog, func(s string) bool { return strings.Contains(s, "stack.sh") }) {
			return true // certificates, no server
		}
		found = append(found, strings.Join(prog, " "))
		return true
	})
	return found
}

// literals are the string literals in e.
func literals(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}
