package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodes are the servers of a cluster of the test's own that
// scripts/stack.sh started in dir (a Galera cluster, a ZooKeeper
// ensemble): node n keeps its state and its pid file in dir/<prefix>n; the
// test kills a node by its PID and has the script start it again.
type nodes struct {
	dir, prefix string
	what        string               // "Galera node"
	restart     func(n int) []string // the script's arguments that start node n again
	env         []string             // the script's environment; nil: the test's
}

func (c nodes) pid(n int) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("%s%d", c.prefix, n), "pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Kill SIGKILLs node n (1..3) by its PID and waits until it is gone.
func (c nodes) Kill(t testing.TB, n int) {
	t.Helper()
	pid, err := c.pid(n)
	if err != nil {
		t.Fatal(err)
	}
	KillPID(t, pid, fmt.Sprintf("%s %d", c.what, n))
	t.Logf("killed %s %d (pid %d)", c.what, n, pid)
}

// Restart starts node n again and waits until it serves (a Galera node:
// until it is Synced, after its state transfer).
func (c nodes) Restart(t testing.TB, n int) {
	t.Helper()
	cmd := exec.Command(InRoot(t, "scripts/stack.sh"), c.restart(n)...)
	cmd.Env = c.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restart %s %d: %v\n%s", c.what, n, err, out)
	}
}

// KillPID SIGKILLs a server a test started (through a script: not the
// test's child) and waits, at most 30 s, until it is gone or a zombie.
func KillPID(t testing.TB, pid int, what string) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", what, pid, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(stat)); err != nil || len(f) > 2 && f[2] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs 30s after SIGKILL", what, pid)
		}
	}
}
