package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// readmeShellLines returns the command lines of the ```sh blocks of the
// README and of docs/*.md, in that order, continuation lines joined,
// comments dropped.
func readmeShellLines(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, name := range readmeDocs(t) {
		lines = append(lines, shellLines(t, name)...)
	}
	return lines
}

// readmeDocs are the README and docs/*.md, in that order.
func readmeDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, docs...)
}

// shellLines returns the command lines of one markdown file's ```sh blocks.
func shellLines(t *testing.T, name string) []string {
	t.Helper()
	var lines []string
	for _, c := range shellCommands(t, name) {
		lines = append(lines, c.line)
	}
	return lines
}

// A shellCommand is a command line of a ```sh block and the answer its
// comment shows, if the comment is a JSON answer ("# {...}").
type shellCommand struct{ line, answer string }

// shellCommands returns the commands of one markdown file's ```sh blocks,
// continuation lines joined, comments dropped but for a JSON answer.
func shellCommands(t *testing.T, name string) []shellCommand {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []shellCommand
	in, cont := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		line = cont + strings.TrimSpace(line)
		if strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`) + " "
			continue
		}
		cont = ""
		answer := ""
		if c := strings.Index(line, "  #"); c >= 0 {
			if comment := strings.TrimSpace(line[c+3:]); strings.HasPrefix(comment, "{") {
				answer = comment
			}
			line = strings.TrimSpace(line[:c])
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, shellCommand{line, answer})
		}
	}
	return out
}

// answerPairRE is a "key":value pair of a documented answer whose value is
// a literal: a string, a number, true or false (not N, not ...).
var answerPairRE = regexp.MustCompile(`"[A-Za-z]+":("[^"]*"|-?[0-9]+|true|false)(?:[,}])`)

// contradicts is the first pair of the documented answer that out does
// not hold, or "".
func contradicts(answer string, out []byte) string {
	for _, m := range answerPairRE.FindAllStringSubmatch(answer, -1) {
		pair := strings.TrimRight(m[0], ",}")
		if !strings.Contains(string(out), pair) {
			return pair
		}
	}
	return ""
}

var (
	makeTargetRE = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
	readmePortRE = regexp.MustCompile(`(127\.0\.0\.1|localhost):(808[012])`)
)

// Every command the README and docs/ show runs as shown: the shop's and the load
// tester's commands and the curl examples run here, in order, against two
// instances of the test's own (the README's ports 8081 and 8082 replaced by
// theirs), and each exits 0 and answers what its comment shows when the
// comment is a JSON answer (each literal "key":value of it); a make target
// it names exists. Not run here:
// `bin/shop serve` (every end-to-end test runs it), the load tools against
// a deployment (TestTheReadmesLoadToolCommandsRunAndFailLoudly), make's
// targets (make test is CI's; TestMakeDemo and TestMakeFailoverTwice run
// the scripts of make demo and make failover; serve is failover's first
// half; chaos, bench, bench-shop and the cluster demo are run by hand) and
// docker compose (no Docker engine here: the compose tests check the file
// statically), helm and kubectl (no Kubernetes API: the chart's tests).
func TestTheReadmesCommandsRun(t *testing.T) {
	root := e2e.BuiltRoot(t)
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makeTargetRE.FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	// make serve's admission (purchase.queueTarget 300ms, config.yaml's):
	// the README's crowds are past it, and the load tester's patient
	// buyers come back as told until they have their answer.
	s := e2e.NewStack(t, e2e.WithMaxSleep(0), e2e.WithAcquireTimeout(time.Minute), e2e.WithQueueTarget(300*time.Millisecond))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders", "--start", "none", "--end", "none")
	a, b := s.Serve(t), s.Serve(t)
	ports := map[string]string{"8080": a.URL, "8081": a.URL, "8082": b.URL}
	work := t.TempDir()
	ran := 0
	var commands []shellCommand
	for _, name := range readmeDocs(t) {
		// Each document begins as its reader would: a stock of 100 (the
		// README's crowds sell it out before docs/demo.md's purchase).
		commands = append(append(commands, shellCommand{line: "# restock"}), shellCommands(t, name)...)
	}
	for _, c := range commands {
		line := c.line
		if line == "# restock" {
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders", "--start", "none", "--end", "none")
			continue
		}
		fields := strings.Fields(line)
		if fields[0] == "taskset" && len(fields) > 3 { // pinned to a CPU: the command after it
			line, fields = strings.Join(fields[3:], " "), fields[3:]
		}
		switch {
		case fields[0] == "make":
			for _, target := range fields[1:] {
				if !strings.HasPrefix(target, "-") && !targets[target] {
					t.Errorf("README/docs: %s: the Makefile has no target %s", line, target)
				}
			}
			continue
		case fields[0] == "helm" || fields[0] == "kubectl":
			// docs/kubernetes.md's: TestTheChartOnAControlPlane (make
			// test-kube) runs them on a control plane of its own.
			continue
		case strings.Contains(line, "/etc/seckill/"), strings.HasPrefix(line, "export SHOP_"):
			// docs/operations.md's "Your own MariaDB and ZooKeeper":
			// TestYourOwnDatabaseAsDocumented runs it, on a MariaDB of its own.
			continue
		case strings.Contains(line, "docker compose"): // TestTheComposeStack (make test-compose) runs them
			continue
		case strings.HasPrefix(line, "scripts/loadtools.sh"),
			strings.HasPrefix(line, "scripts/stack.sh tls"), // TestMySQLOverTLS runs it
			strings.Contains(line, "bin/shop serve"), strings.Contains(line, ".example"):
			continue
		case fields[0] != "curl" && fields[0] != "bin/shop" && fields[0] != "bin/loadtest":
			t.Errorf("README/docs: %q is a command no test runs: run it here or in another test", line)
			continue
		}
		cmdline := readmePortRE.ReplaceAllStringFunc(line, func(m string) string {
			return strings.TrimPrefix(ports[m[len(m)-4:]], "http://")
		})
		if fields[0] == "bin/loadtest" && !strings.Contains(cmdline, "--url") && !strings.Contains(cmdline, "compare") && !strings.Contains(cmdline, "--help") {
			cmdline += " --url " + a.URL + "," + b.URL // the default URLs are the README's :8081 and :8082
		}
		cmdline = strings.Replace(cmdline, "bin/", root+"/bin/", 1)
		cmd := exec.Command("bash", "-c", cmdline)
		cmd.Dir = work
		cmd.Env = append(s.Env, "SHOP_CONFIG="+root+"/config.yaml")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("README/docs: %s\nran as: %s\n%v\n%s", line, cmdline, err, out)
		} else if pair := contradicts(c.answer, out); pair != "" {
			t.Errorf("README/docs: %s answered %s; the page shows %s (%s)", line, out, c.answer, pair)
		}
		ran++
	}
	if ran < 10 {
		t.Errorf("ran %d of the README's commands; the extraction lost them", ran)
	}
}

var (
	mdLinkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeadingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	slugDropRE  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces as dashes.
func slug(heading string) string {
	return strings.ReplaceAll(slugDropRE.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
}

// Every relative link of the README and docs/ names a file that exists and,
// with #anchor, a heading of that file: the README points to the details,
// and a moved section must not leave its links behind.
func TestTheDocsLinksResolve(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range append([]string{"../../README.md"}, docs...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLinkRE.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			p := name
			if file != "" {
				p = filepath.Join(filepath.Dir(name), file)
			}
			body, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("%s links to %s: %v", filepath.Base(name), target, err)
				continue
			}
			checked++
			if anchor == "" {
				continue
			}
			found := false
			for _, h := range mdHeadingRE.FindAllStringSubmatch(string(body), -1) {
				found = found || slug(h[1]) == anchor
			}
			if !found {
				t.Errorf("%s links to %s: %s has no heading #%s", filepath.Base(name), target, filepath.Base(p), anchor)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d links; the extraction lost them", checked)
	}
}

// The README reads as a newcomer reads it: at most 250 lines, and the
// project's own words (the seed, a strategy, the fence and its claim,
// admission, overselling, the sweeper) not used before its glossary says
// what they are.
func TestTheReadmeExplainsItsWordsFirst(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > 250 {
		t.Errorf("README.md has %d lines, over 250: details belong in docs/", n)
	}
	const glossary = "## Words used below"
	i := strings.Index(text, glossary)
	if i < 0 {
		t.Fatalf("README.md has no %q section", glossary)
	}
	before := strings.ToLower(text[:i])
	for _, word := range []string{"seed", "strateg", "fenc", "claim", "admission", "oversold", "oversell", "sweeper", "waiting room"} {
		if strings.Contains(before, word) {
			t.Errorf("README.md uses %q before its glossary (%q)", word, glossary)
		}
		if !strings.Contains(strings.ToLower(text[i:strings.Index(text[i+1:], "\n## ")+i+1]), word) {
			t.Errorf("README.md's glossary does not explain %q", word)
		}
	}
}
