package e2e

import (
	"errors"
	"os/exec"
	"strings"
)

// raceExitCode is the race detector's exit status for a program that
// raced (GORACE's exitcode, 66 unless set).
const raceExitCode = 66

// The race built shop can report one race that is not its own: go-zookeeper
// v1.0.4, the latest release, reads Conn.lastZxid in sendSetWatches on every
// reconnect while its new receive loop already writes it (conn.go 614 and
// 849; samuel/go-zookeeper#178 and #260, go-zookeeper/zk#35, unmerged). Any
// reconnect with a watch set can show it, and a busy machine makes a
// reconnect out of a ping that came late: a test that cuts no connection
// failed on it once. The tests that cut connections use ShopBinaryNoRace;
// the others accept that report, and only that one.
var libraryRace = [2]string{
	"github.com/go-zookeeper/zk.(*Conn).recvLoop(",
	"github.com/go-zookeeper/zk.(*Conn).sendSetWatches(",
}

// onlyLibraryRaces reports whether err is the race detector's exit and every
// race the log reports is go-zookeeper's own (libraryRace), and how many.
// Any other race, or an exit 66 with no report in the log, is not.
func onlyLibraryRaces(err error, log string) (bool, int) {
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != raceExitCode {
		return false, 0
	}
	reports := strings.Split(log, "WARNING: DATA RACE")[1:]
	for _, r := range reports {
		if !isLibraryRace(r) {
			return false, 0
		}
	}
	return len(reports) > 0, len(reports)
}

// isLibraryRace reads one report: the two accesses' top frames, the first
// after its "… at 0x… by goroutine N:" line and the other after "Previous
// … at", must be libraryRace's pair, in either order.
func isLibraryRace(report string) bool {
	if end := strings.Index(report, "=================="); end >= 0 {
		report = report[:end]
	}
	var frames []string
	lines := strings.Split(report, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if strings.Contains(l, " at 0x") && strings.Contains(l, " by ") && strings.HasSuffix(l, ":") && i+1 < len(lines) {
			frames = append(frames, strings.TrimSpace(lines[i+1]))
		}
	}
	if len(frames) != 2 {
		return false
	}
	a, b := frames[0], frames[1]
	return strings.HasPrefix(a, libraryRace[0]) && strings.HasPrefix(b, libraryRace[1]) ||
		strings.HasPrefix(a, libraryRace[1]) && strings.HasPrefix(b, libraryRace[0])
}
