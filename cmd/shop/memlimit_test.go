package main

import (
	"os"
	"path/filepath"
	"testing"
)

// With a memory limit the connection cap keeps the connections within
// half of it; without one, or with server.maxConnections given, it is as
// the open-file limit says (#75 item 6: 8 000 idle connections took 150 MB
// of a pod limited to 256 Mi).
func TestTheConnectionCapFollowsTheMemoryLimit(t *testing.T) {
	c, err := load(t, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	files := httpLimits(c, 0)
	pod := httpLimits(c, 256<<20)
	if want := min(files.connections, 256<<20/2/connMemory); pod.connections != want || pod.perClient != want/2 {
		t.Errorf("256 MiB: %d connections, %d a client; want %d and %d (half the memory at %d bytes each)", pod.connections, pod.perClient, want, want/2, connMemory)
	}
	c.Server.MaxConnections = 50_000
	if l := httpLimits(c, 256<<20); l.connections != 50_000 {
		t.Errorf("server.maxConnections 50000 with a memory limit: %d, want the setting", l.connections)
	}
}

// A cgroup's limit file: a number is the limit, "max" or v1's huge number
// is none.
func TestACgroupsMemoryLimitIsRead(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]int64{"268435456\n": 256 << 20, "max\n": 0, "9223372036854771712\n": 0, "": 0} {
		p := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := readLimit(p); got != want {
			t.Errorf("%q: %d, want %d", content, got, want)
		}
	}
	if got := readLimit(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("a missing file: %d, want 0", got)
	}
}
