package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var listeningRE = regexp.MustCompile(`msg=listening addr=(\S+)`)

// Instance is a running `shop serve`.
type Instance struct {
	URL  string
	Cmd  *exec.Cmd
	Logs func() string
	once sync.Once
	err  error // how the process ended, once stopped
	done chan struct{}
	// libraryRaces counts the races the process reported that are
	// go-zookeeper's own (onlyLibraryRaces), forgiven in err.
	libraryRaces int
}

// Stop sends SIGINT and waits for the process; it returns how it exited.
func (in *Instance) Stop(t testing.TB) error {
	t.Helper()
	in.once.Do(func() {
		if err := in.Cmd.Process.Signal(os.Interrupt); err != nil {
			in.err = err
			return
		}
		select {
		case <-in.done:
		case <-time.After(30 * time.Second):
			in.Cmd.Process.Kill()
			<-in.done
			in.err = fmt.Errorf("did not stop within 30s of SIGINT")
		}
	})
	return in.err
}

// Serve starts an instance on a free port and returns it once it is ready.
// It is stopped with SIGINT at cleanup, if not before, and must exit 0.
func (s Stack) Serve(t testing.TB, opts ...Option) *Instance {
	t.Helper()
	return s.ServeOn(t, "127.0.0.1:0", opts...)
}

// ServeOn is serve on the address addr.
func (s Stack) ServeOn(t testing.TB, listen string, opts ...Option) *Instance {
	t.Helper()
	return s.serve(t, exec.Command(s.Binary, "serve", "--server.addr="+listen), environ(t, opts))
}

// ServeIn is serve in host h of a Network, on port 8080 of its address.
func (s Stack) ServeIn(t testing.TB, h *Host, opts ...Option) *Instance {
	t.Helper()
	return s.serve(t, h.Command(s.Binary, "serve", "--server.addr="+h.Addr(8080)), environ(t, opts))
}

func (s Stack) serve(t testing.TB, cmd *exec.Cmd, env []string) *Instance {
	t.Helper()
	cmd.Env = append(append([]string{}, s.Env...), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	var logMu sync.Mutex
	var logs []string
	in := &Instance{Cmd: cmd, done: make(chan struct{})}
	in.Logs = func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Join(logs, "\n")
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logs = append(logs, sc.Text())
			logMu.Unlock()
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		if err := cmd.Wait(); err != nil && in.err == nil {
			if ok, n := onlyLibraryRaces(err, in.Logs()); ok {
				in.libraryRaces = n // go-zookeeper's, not the shop's
			} else {
				in.err = err
			}
		}
		close(in.done)
	}()
	t.Cleanup(func() {
		err := in.Stop(t)
		switch {
		case err != nil:
			t.Errorf("shop did not exit cleanly on SIGINT: %v\n%s", err, in.Logs())
			return
		case in.libraryRaces > 0:
			t.Logf("the shop at %s reported go-zookeeper v1.0.4's own race on a reconnect %d time(s), and no other (see libraryRace)", in.URL, in.libraryRaces)
		}
		if t.Failed() {
			// A failed test shows what its instances said: a 5xx or a
			// lost buyer is often explained there, and the log is gone
			// with the test.
			t.Logf("the log of the shop at %s (pid %d), its last %d lines:\n%s", in.URL, in.Cmd.Process.Pid, logTail, in.tail(logTail))
		}
	})
	select {
	case a := <-addr:
		in.URL = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("shop did not start listening within 30s\n%s", in.Logs())
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		a := Ask(http.MethodGet, in.URL+"/readyz")
		if a.Status == http.StatusOK {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("shop at %s not ready within 30s (%d %v)\n%s", in.URL, a.Status, a.Err, in.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logTail is how many lines of an instance's log a failed test shows.
const logTail = 60

// tail is the last n lines of the instance's log.
func (in *Instance) tail(n int) string {
	lines := strings.Split(in.Logs(), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Kill ends the instance with SIGKILL: no shutdown, no release of its locks.
func (in *Instance) Kill(t *testing.T) {
	t.Helper()
	in.once.Do(func() {
		if err := in.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-in.done
		in.err = nil // killed on purpose
	})
}
