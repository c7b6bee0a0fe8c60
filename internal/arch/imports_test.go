// Package arch holds the tests of the module's shape: which package may
// import what.
package arch

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/seckill-zk/seckill-zk/"

// rules: an import path prefix, and the only packages whose non-test code
// may import it. tests/framework/* are test support (the harness starts the
// servers, its fault proxies speak ZooKeeper's and MySQL's wire, it reads
// the tables and the lock's nodes); no program imports them.
// tests/redispeer is the benchmark's Redis + Lua contender, a program of
// its own that answers HTTP and writes orders like the shop, on purpose
// without the shop's layers.
var rules = []struct {
	imported string
	only     []string
}{
	{"github.com/go-zookeeper/zk", []string{"internal/zk", "tests/framework/e2e"}},
	{"gorm.io/", []string{"internal/repo"}},
	{"github.com/go-sql-driver/mysql", []string{"internal/repo", "migrations", "tests/framework/e2e", "tests/redispeer"}},
	{module + "tests/", []string{"tests/framework/e2e"}}, // the harness reads the final rows for the history checker
	{"github.com/anishathalye/porcupine", []string{"tests/framework/history"}},
	{"github.com/pressly/goose", []string{"internal/repo", "migrations"}},
	{"github.com/gin-gonic/gin", []string{"internal/handler", "cmd/shop", "tests/redispeer"}},
	{"github.com/spf13/viper", []string{"cmd/shop"}},
	{"github.com/prometheus/", []string{"internal/metrics", "internal/metrics/scrape"}},
	{"github.com/golang-jwt/jwt", []string{"internal/auth"}},
	// Kubernetes' API types are for the chart's test (tests/e2e) alone: no
	// program of the module knows it runs on Kubernetes.
	{"k8s.io/", nil},
	{"sigs.k8s.io/", nil},
	{"github.com/prometheus-operator/", nil},
}

// forbidden: what a package's non-test code never imports, whatever the
// rules above allow: the service declares the interfaces it needs and
// knows neither the database nor ZooKeeper nor HTTP.
var forbidden = map[string][]string{
	"internal/service": {"github.com/go-zookeeper/zk", "gorm.io/", "github.com/go-sql-driver/mysql",
		"github.com/gin-gonic/gin", module + "internal/repo", module + "internal/zklock", module + "internal/handler"},
}

// layers: the only packages of the module a package's non-test code may
// import. zk is the bottom (the connection, sessions, operations), zklock
// the recipes on it, service the rules on the interfaces it declares.
var layers = map[string][]string{
	"internal/zk":      {},
	"internal/zklock":  {"internal/zk"},
	"internal/service": {},
	"internal/api":     {},
	"internal/auth":    {"internal/service"},
	"internal/limit":   {},
	// The harness sits below every package whose tests use it (internal/zk's
	// and internal/repo's own among them): it imports only leaves, and talks
	// to ZooKeeper and MySQL through their drivers.
	"tests/framework/e2e": {"internal/api", "internal/loadgen", "internal/metrics/scrape", "tests/framework/history"},
}

// TestImportRules reads every non-test Go file of the module and checks
// its imports against the rules.
func TestImportRules(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := walkGoFiles(root, func(p string) error {
		rel, _ := filepath.Rel(root, p)
		pkg := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, r := range rules {
				if strings.HasPrefix(path, r.imported) && !slices.Contains(r.only, pkg) {
					t.Errorf("%s imports %s: only %v may", rel, path, r.only)
				}
			}
			if allowed, ok := layers[pkg]; ok && strings.HasPrefix(path, module) && !slices.Contains(allowed, strings.TrimPrefix(path, module)) {
				t.Errorf("%s imports %s: %s may import only %v of the module", rel, path, pkg, allowed)
			}
			for _, f := range forbidden[pkg] {
				if strings.HasPrefix(path, f) {
					t.Errorf("%s imports %s, which %s never does", rel, path, pkg)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d files; the walk lost the module", files)
	}
}

// walkGoFiles calls f with the path of every non-test Go file under root,
// leaving out hidden directories, bin, out and testdata.
func walkGoFiles(root string, f func(path string) error) error {
	return walkGo(root, false, f)
}

// walkGo calls f with the path of every Go file under root, the tests'
// alone if tests, leaving out hidden directories, bin, out and testdata.
func walkGo(root string, tests bool, f func(path string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "out" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") != tests {
			return nil
		}
		return f(p)
	})
}
