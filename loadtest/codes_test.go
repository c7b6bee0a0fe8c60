package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/api"
)

// The k6 script and the JMeter plan check answers by their codes: each code
// they name is one the shop answers (internal/api), so a renamed code cannot
// leave a load tool counting answers that never come.
func TestTheLoadToolsUseOnlyTheShopsCodes(t *testing.T) {
	tools := []struct {
		file string
		uses *regexp.Regexp // a code's use; its first group holds one code or several joined by |
	}{
		{"k6/seckill.js", regexp.MustCompile(`code === '([^']*)'`)},
		{"jmeter/seckill.jmx", regexp.MustCompile(`"code":"\(([^)]*)\)"`)},
	}
	for _, tool := range tools {
		b, err := os.ReadFile(tool.file)
		if err != nil {
			t.Fatal(err)
		}
		uses := tool.uses.FindAllStringSubmatch(string(b), -1)
		if len(uses) == 0 {
			t.Errorf("%s: found no code it checks (the pattern %s is out of date)", tool.file, tool.uses)
		}
		for _, u := range uses {
			for _, code := range strings.Split(u[1], "|") {
				if !slices.Contains(api.All, code) {
					t.Errorf("%s checks for the code %q, which the shop never answers (internal/api)", tool.file, code)
				}
			}
		}
	}
}
