package zk

import (
	"fmt"
	"path"
	"strings"
)

// ValidatePath reports whether p is a usable ZooKeeper node path: absolute,
// no empty, "." or ".." segments, no trailing slash (except the root).
func ValidatePath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("zk: path %q is not absolute", p)
	}
	if p == "/" {
		return nil
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("zk: path %q ends with a slash", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return fmt.Errorf("zk: path %q has an empty segment", p)
		case ".", "..":
			return fmt.Errorf("zk: path %q has a relative segment", p)
		}
		if strings.ContainsRune(seg, 0) {
			return fmt.Errorf("zk: path %q has a NUL character", p)
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("zk: path %q is not clean", p)
	}
	return nil
}
