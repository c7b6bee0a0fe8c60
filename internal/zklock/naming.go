package zklock

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Markers that end a protected node's name before ZooKeeper's sequence
// number, as Curator names them.
const (
	lockMarker  = "lock-"    // InterProcessMutex
	readMarker  = "__READ__" // InterProcessReadWriteLock, readers
	writeMarker = "__WRIT__" // InterProcessReadWriteLock, writers
	leaseMarker = "lease-"   // InterProcessSemaphoreV2 leases
	latchMarker = "latch-"   // LeaderLatch
)

// sequenceKey is what Curator sorts nodes by: for each marker in turn, the
// text after its last occurrence when there is one (Curator's
// standardFixForSorting applied marker by marker).
func sequenceKey(name string, markers ...string) string {
	for _, m := range markers {
		if i := strings.LastIndex(name, m); i >= 0 {
			name = name[i+len(m):]
		}
	}
	return name
}

// sortNodes sorts child names in queue order, as Curator's
// LockInternals.getSortedChildren does (byte-wise, stable). Each key is
// computed once: a waiter sorts the whole queue at every hand-off.
func sortNodes(names []string, markers ...string) {
	type keyed struct{ key, name string }
	ks := make([]keyed, len(names))
	for i, n := range names {
		ks[i] = keyed{sequenceKey(n, markers...), n}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i, k := range ks {
		names[i] = k.name
	}
}

// ValidatePath reports whether p is a usable ZooKeeper node path: absolute,
// no empty, "." or ".." segments, no trailing slash (except the root).
func ValidatePath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("zklock: path %q is not absolute", p)
	}
	if p == "/" {
		return nil
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("zklock: path %q ends with a slash", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return fmt.Errorf("zklock: path %q has an empty segment", p)
		case ".", "..":
			return fmt.Errorf("zklock: path %q has a relative segment", p)
		}
		if strings.ContainsRune(seg, 0) {
			return fmt.Errorf("zklock: path %q has a NUL character", p)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("zklock: path %q is not clean", p)
	}
	return nil
}
