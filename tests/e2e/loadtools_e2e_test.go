package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

var exampleHost = regexp.MustCompile(`https?://shop-[ab]\.example:8080|shop-[ab]\.example|\b8080\b`)

// The README's commands for the load tester, k6 and JMeter against a
// deployment run as shown
// (its example hosts replaced by a local instance), and a run against a
// deployment that is not there fails: a load tool that fails must not look
// like a pass.
func TestTheReadmesLoadToolCommandsRunAndFailLoudly(t *testing.T) {
	e2e.Integration(t)
	for _, tool := range []string{"../../bin/k6", "/usr/share/jmeter", "../../bin/loadtest"} {
		if _, err := os.Stat(tool); err != nil {
			t.Fatalf("%s is missing: make build loadtools builds bin/ and installs k6 and JMeter", tool)
		}
	}
	s := e2e.NewStack(t, e2e.WithMaxSleep(2*time.Millisecond))
	s.Shop(t, "migrate")
	in := s.Serve(t)
	host, port, _ := strings.Cut(strings.TrimPrefix(in.URL, "http://"), ":")
	closed := e2e.ClosedAddr(t)
	closedHost, closedPort, _ := strings.Cut(closed, ":")
	for _, prefix := range []string{"bin/loadtest --url ", "scripts/loadtools.sh k6 ", "scripts/loadtools.sh jmeter "} {
		var lines []string
		for _, l := range readmeShellLines(t) {
			if strings.HasPrefix(l, prefix) && strings.Contains(l, ".example") { // against a deployment
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			t.Errorf("the README shows no %s... command for a deployment", prefix)
			continue
		}
		for _, line := range lines {
			run := func(h, p string) (string, error) {
				cmdline := exampleHost.ReplaceAllStringFunc(line, func(m string) string {
					switch {
					case strings.HasPrefix(m, "http"):
						return "http://" + h + ":" + p
					case m == "8080":
						return p
					}
					return h
				})
				cmdline = strings.Replace(cmdline, " 1500", " 30", 1) // 30 buyers
				cmd := exec.Command("bash", "-c", cmdline)
				cmd.Dir = "../.."
				cmd.Env = s.Env
				out, err := cmd.CombinedOutput()
				return cmdline + "\n" + string(out), err
			}
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders")
			time.Sleep(1200 * time.Millisecond) // the sold-out mark of the last run expires
			if out, err := run(host, port); err != nil {
				t.Errorf("%s: %v\n%s", line, err, out)
			}
			if stock, orders := s.Counts(t); stock != 0 || orders != 10 {
				t.Errorf("%s: stock %d with %d orders after 30 buyers, want 0 and 10", line, stock, orders)
			}
			if out, err := run(closedHost, closedPort); err == nil {
				t.Errorf("%s against %s where nothing listens: exit 0, want a failure\n%s", line, closed, out)
			}
		}
	}
}
