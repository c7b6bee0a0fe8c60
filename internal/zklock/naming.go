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
	lockMarker = "lock-"
)

// sequenceKey is what Curator sorts lock nodes by: the text after the last
// occurrence of marker, or the whole name when it has none.
func sequenceKey(name, marker string) string {
	i := strings.LastIndex(name, marker)
	if i < 0 {
		return name
	}
	return name[i+len(marker):]
}

// sortNodes sorts child names in queue order, as Curator's
// LockInternals.getSortedChildren does (byte-wise, stable).
func sortNodes(names []string, marker string) {
	slices.SortStableFunc(names, func(a, b string) int {
		return strings.Compare(sequenceKey(a, marker), sequenceKey(b, marker))
	})
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
