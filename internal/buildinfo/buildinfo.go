// Package buildinfo is the shop's version: the release it is (Version,
// also the chart's appVersion, the image's label and CHANGELOG.md's latest
// heading: TestTheVersionIsOneEverywhere keeps them one) and, when the Go
// toolchain recorded it, the commit it was built from.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Version is the release, semantic versioning.
const Version = "0.11.0"

// commit and modified are what a build that does not let the Go toolchain
// stamp the commit (GOFLAGS=-buildvcs=false) may set instead, with
// -ldflags -X: make build does (the Makefile's LDFLAGS).
var commit, modified string

// Info is what a binary knows of its build.
type Info struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"` // the commit; "" when not recorded (go run, a tree without git)
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
}

// Read returns the running binary's Info.
func Read() Info {
	info := Info{Version: Version, Revision: commit, Modified: modified == "true"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.Go = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the version line: "0.11.0 (commit 5edcdae1, go1.26)".
func (i Info) String() string {
	s := i.Version
	rev := i.Revision
	if len(rev) > 8 {
		rev = rev[:8]
	}
	switch {
	case rev != "" && i.Modified:
		s += fmt.Sprintf(" (commit %s, modified", rev)
	case rev != "":
		s += fmt.Sprintf(" (commit %s", rev)
	default:
		s += " (commit unknown: built without the commit stamped, as go build -buildvcs=false or outside git does; make build stamps it"
	}
	if i.Go != "" {
		s += ", " + i.Go
	}
	return s + ")"
}
