package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// connMemory is what an idle keep-alive connection costs the shop: 8 000
// of them from one address took an instance from 34 MB to 185 MB, about
// 19 KB each (the reader's and writer's buffers, the goroutine's stack).
const connMemory = 20 << 10

// connectionsFor is how many connections a memory limit of limit bytes
// holds with half of it left for the sale: 0 for no limit.
func connectionsFor(limit int64) int {
	if limit <= 0 {
		return 0
	}
	return max(64, int(limit/2/connMemory))
}

// memoryLimit is the process's memory limit in bytes: GOMEMLIMIT (the
// chart sets it to the pod's limits.memory), else the cgroup's (v2's
// memory.max, v1's memory.limit_in_bytes); 0 when there is none.
func memoryLimit() int64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if l := readLimit(f); l > 0 {
			return l
		}
	}
	return 0
}

// readLimit reads a cgroup's memory limit file: 0 for "max", a missing
// file, or a number past any machine's memory (v1's "no limit").
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<60 {
		return 0
	}
	return n
}
