package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// make build stamps the commit into bin/shop even where the toolchain
// stamps none (GOFLAGS=-buildvcs=false, as on this project's machines):
// shop version names it. Fails without the Makefile's LDFLAGS ("commit
// unknown").
func TestMakeBuildStampsTheCommit(t *testing.T) {
	root := e2e.BuiltRoot(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD in %s: %v (the test needs the clone's git)", root, err)
	}
	out, err := exec.Command(filepath.Join(root, "bin/shop"), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("shop version: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`\(commit ([0-9a-f]{8})`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("shop version %q names no commit", out)
	}
	if !strings.HasPrefix(string(head), string(m[1])) {
		t.Logf("shop version names %s, HEAD is %.8s: bin/shop is older than the tree (make build)", m[1], head)
	}
}
