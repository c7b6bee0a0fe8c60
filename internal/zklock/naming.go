package zklock

import (
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
