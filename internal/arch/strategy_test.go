package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Each purchase strategy reads end to end in its own files of
// internal/service: the file of its registry entry (a package-level
// `var x = Strategy{Name: "name", ...}`) and the files whose names begin
// with its name (allot.go, allotlease.go). A strategy's files use what the
// shop and the strategies share (the queue, a batch's sale, the lock's
// hand-off) but nothing another strategy declares; and every entry is in
// the registry (strategy.go).
func TestStrategiesStandAlone(t *testing.T) {
	problems, strategies := strategyProblems(t, serviceSources(t))
	for _, p := range problems {
		t.Error(p)
	}
	if len(strategies) < 5 {
		t.Fatalf("found the entries of %v: want seed, batch, atomic, allot and unlocked", strategies)
	}
}

// serviceSources is internal/service's Go sources but its tests, by name.
func serviceSources(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join("..", "service")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			files[n] = string(b)
		}
	}
	return files
}

// The rule catches a strategy that uses another's declarations, an entry
// left out of the registry and one whose files do not bear its name.
func TestTheStrategyRuleCatchesATangle(t *testing.T) {
	registry := "package service\nfunc Strategies() []Strategy { return []Strategy{aStrategy, bStrategy} }\n"
	a := "package service\ntype A struct{}\nfunc helperOfA() {}\nvar aStrategy = Strategy{Name: \"a\"}\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"b calls a's helper", map[string]string{"strategy.go": registry, "a.go": a,
			"b.go": "package service\nvar bStrategy = Strategy{Name: \"b\"}\nfunc sell() { helperOfA() }\n"}, "b.go uses helperOfA"},
		{"b's second file names a's type", map[string]string{"strategy.go": registry, "a.go": a,
			"b.go": "package service\nvar bStrategy = Strategy{Name: \"b\"}\n", "bqueue.go": "package service\nvar q []A\n"}, "bqueue.go uses A"},
		{"an entry not in the registry", map[string]string{"strategy.go": registry, "a.go": a,
			"b.go": "package service\nvar bStrategy = Strategy{Name: \"b\"}\n", "c.go": "package service\nvar cStrategy = Strategy{Name: \"c\"}\n"}, "cStrategy is not in the registry"},
		{"an entry in a file without its name", map[string]string{"strategy.go": registry, "a.go": a,
			"sales.go": "package service\nvar bStrategy = Strategy{Name: \"b\"}\n"}, "sales.go holds the entry of b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			problems, _ := strategyProblems(t, c.files)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("problems %q, want one saying %q", problems, c.want)
			}
		})
	}
	problems, _ := strategyProblems(t, map[string]string{"strategy.go": registry, "a.go": a,
		"b.go": "package service\nvar bStrategy = Strategy{Name: \"b\"}\nfunc sell() { shared() }\n", "queue.go": "package service\nfunc shared() {}\n"})
	if len(problems) > 0 {
		t.Errorf("strategies that share only what is shared: %q", problems)
	}
}

// strategyProblems checks the rule on the files of a package (name ->
// source) and returns what breaks it and the strategies found.
func strategyProblems(t *testing.T, files map[string]string) (problems, strategies []string) {
	t.Helper()
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[name] = f
	}
	// The entries: name -> the var that holds it, and its file.
	entryVar, entryFile := map[string]string{}, map[string]string{}
	for fname, f := range parsed {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if name, ok := entryName(v); ok {
						entryVar[name], entryFile[name] = vs.Names[i].Name, fname
					}
				}
			}
		}
	}
	// Each file's strategy: the longest entry name its file name begins with.
	owner := map[string]string{}
	for fname := range parsed {
		base := strings.TrimSuffix(fname, ".go")
		for name := range entryVar {
			if strings.HasPrefix(base, name) && len(name) > len(owner[fname]) {
				owner[fname] = name
			}
		}
	}
	for name, fname := range entryFile {
		strategies = append(strategies, name)
		if owner[fname] != name {
			problems = append(problems, fname+" holds the entry of "+name+": a strategy's files begin with its name")
		}
	}
	slices.Sort(strategies)
	// What each strategy declares at package level (methods are reached
	// through its types).
	declaredBy := map[string]string{}
	for fname, f := range parsed {
		st := owner[fname]
		if st == "" {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declaredBy[d.Name.Name] = st
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						declaredBy[s.Name.Name] = st
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declaredBy[n.Name] = st
						}
					}
				}
			}
		}
	}
	for fname, f := range parsed {
		st := owner[fname]
		if st == "" {
			continue
		}
		reported := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			if other := declaredBy[id.Name]; other != "" && other != st && !reported[id.Name] {
				reported[id.Name] = true
				problems = append(problems, fname+" uses "+id.Name+", which strategy "+other+" declares: move what both need to a shared file")
			}
			return true
		})
	}
	// Every entry is in the registry.
	if reg, ok := parsed["strategy.go"]; !ok {
		problems = append(problems, "no strategy.go: the registry is missing")
	} else {
		used := map[string]bool{}
		ast.Inspect(reg, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				used[id.Name] = true
			}
			return true
		})
		for _, v := range entryVar {
			if !used[v] {
				problems = append(problems, v+" is not in the registry (strategy.go)")
			}
		}
	}
	slices.Sort(problems)
	return problems, strategies
}

// entryName is the Name of a registry entry's literal, Strategy{Name: "x"}.
func entryName(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return "", false
	}
	if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "Strategy" {
		return "", false
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
			if s, ok := kv.Value.(*ast.BasicLit); ok {
				name, err := strconv.Unquote(s.Value)
				return name, err == nil
			}
		}
	}
	return "", false
}
