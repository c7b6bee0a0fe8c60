package e2e

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ensemble is a 3-node ZooKeeper Ensemble of the test's own, started by
// scripts/stack.sh; its nodes are killed by PID and restarted by the test.
type Ensemble struct {
	nodes
	Servers []string
}

// StartEnsemble starts a 3-node ZooKeeper ensemble of the test's own
// (scripts/stack.sh ensemble), killed at cleanup.
func StartEnsemble(t *testing.T) *Ensemble {
	t.Helper()
	return StartEnsembleIn(t, nil)
}

// StartEnsembleIn starts the ensemble with node n in hosts[n-1] of a
// Network, on its address, or on loopback if hosts is nil.
func StartEnsembleIn(t *testing.T, hosts []*Host) *Ensemble {
	t.Helper()
	Integration(t)
	dir := t.TempDir()
	env := hostsEnv(hosts)
	cmd := exec.Command(InRoot(t, "scripts/stack.sh"), "ensemble", dir)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("start a ZooKeeper ensemble: %v\n%s", err, stderrOf(err))
	}
	e := &Ensemble{Servers: strings.Split(strings.TrimSpace(string(out)), ",")}
	e.nodes = nodes{dir: dir, prefix: "zk", what: "ZooKeeper node", env: env,
		restart: func(n int) []string { return []string{"ensemble-node", dir, strconv.Itoa(n)} }}
	t.Cleanup(func() {
		for n := 1; n <= 3; n++ {
			if pid, err := e.pid(n); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL) // it may be dead already
			}
		}
	})
	return e
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// mode asks node n (1..3) for its role with the srvr command.
func (e *Ensemble) mode(n int) string {
	conn, err := net.DialTimeout("tcp", e.Servers[n-1], time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second)) // a late answer is an empty mode
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		k, err := conn.Read(buf)
		b.Write(buf[:k])
		if err != nil {
			break
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// find returns the node whose mode is want, waiting up to 30s for a quorum.
func (e *Ensemble) find(t *testing.T, want string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for n := 1; n <= 3; n++ {
			if e.mode(n) == want {
				return n
			}
		}
	}
	t.Fatalf("no %s in the ensemble within 30s", want)
	return 0
}

// Leader is the node that leads now (waiting up to 30s for a quorum).
func (e *Ensemble) Leader(t *testing.T) int { return e.find(t, "leader") }

// Follower is a node that follows now.
func (e *Ensemble) Follower(t *testing.T) int { return e.find(t, "follower") }
