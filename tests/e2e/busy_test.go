package e2e

import (
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// busyLoop runs a busy loop on cpus (taskset's list) for at most secs
// seconds: a process of its own, stopped by its pid when the returned func
// is called, and killed at its limit by timeout whatever becomes of the
// test.
func busyLoop(t testing.TB, cpus string, secs float64) (stop func()) {
	t.Helper()
	cmd := exec.Command("timeout", "-s", "KILL", strconv.Itoa(int(secs)+1), "taskset", "-c", cpus, "sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatalf("the busy loop (timeout and taskset, from coreutils and util-linux): %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // its exit status is the signal's
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // timeout passes it on to the loop
		<-done
	}
}

// pin runs pid, all its threads, on cpus (taskset's list).
func pin(t testing.TB, pid int, cpus string) {
	t.Helper()
	if b, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		t.Fatalf("taskset -p %d: %v: %s", pid, err, b)
	}
}
