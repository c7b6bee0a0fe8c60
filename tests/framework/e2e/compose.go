package e2e

// The repository's docker-compose.yml on the Docker engine
// scripts/containers.sh starts (make test-compose), with the stack's own
// commands: docker compose up, run, exec, kill, down. A ComposeProject is
// one compose project of a test's own name; every container, network and
// volume it made is removed at cleanup.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// howToStartCompose is what a test says when the engine, Compose or a stand-in
// image is missing.
const howToStartCompose = "run it with `make test-compose` (scripts/containers.sh starts a Docker engine of the project's own, " +
	"builds Compose v2 and the stand-in images, and points DOCKER_HOST and the *_IMAGE variables at them)"

// ComposeProject is a compose project: the repository's compose file under a name
// of its own, with the environment the stand-ins need.
type ComposeProject struct {
	Dir  string // the repository, where docker-compose.yml is
	Name string // COMPOSE_PROJECT_NAME
	Env  []string
}

// ComposeStandIns are the variables the compose file and the Dockerfile read for
// their images; make test-compose sets each to a stand-in.
var ComposeStandIns = []string{"GO_IMAGE", "BASE_IMAGE", "ZOOKEEPER_IMAGE", "MYSQL_IMAGE", "MARIADB_IMAGE", "PROMETHEUS_IMAGE", "GRAFANA_IMAGE"}

// NewComposeProject is a project named name in the repository at dir. It fails the test
// when no engine answers, Compose is missing or a stand-in variable is not
// set, and takes the project down (volumes included) at cleanup.
func NewComposeProject(t *testing.T, dir, name string) *ComposeProject {
	t.Helper()
	Integration(t)
	if os.Getenv("DOCKER_HOST") == "" {
		t.Fatalf("DOCKER_HOST is not set: %s", howToStartCompose)
	}
	for _, v := range ComposeStandIns {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: %s", v, howToStartCompose)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := &ComposeProject{Dir: abs, Name: name}
	if out, err := p.Try(context.Background(), nil, "version"); err != nil {
		t.Fatalf("docker compose version: %v\n%s\n%s", err, out, howToStartCompose)
	}
	p.Down(t) // what an earlier run left
	t.Cleanup(func() { p.Down(t) })
	return p
}

// Try runs docker compose args in the project with extra environment
// variables (NAME=value), and returns its combined output.
func (p *ComposeProject) Try(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", append([]string{"compose"}, args...)...)
	cmd.Dir = p.Dir
	cmd.Env = append(append(os.Environ(), "COMPOSE_PROJECT_NAME="+p.Name, "COMPOSE_PROGRESS=plain"), append(p.Env, env...)...)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Run runs docker compose args, within limit, and fails the test if it
// fails; it logs the command and returns its output.
func (p *ComposeProject) Run(t *testing.T, limit time.Duration, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	out, err := p.Try(ctx, env, args...)
	t.Logf("%sdocker compose %s (%.1f s)", strings.Join(append(slices.Clone(env), ""), " "), strings.Join(args, " "), time.Since(start).Seconds())
	if err != nil {
		t.Fatalf("docker compose %s: %v\n%s", strings.Join(args, " "), err, LastLines(out, 60))
	}
	return out
}

// Down is docker compose down -v for every profile: the project's
// containers, networks and volumes.
func (p *ComposeProject) Down(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := p.Try(ctx, nil, "--profile", "*", "down", "-v", "--remove-orphans", "--timeout", "10"); err != nil {
		t.Errorf("docker compose down -v: %v\n%s", err, LastLines(out, 30))
	}
}

// Left is what the engine still holds of the project: its containers,
// networks and volumes, by name.
func (p *ComposeProject) Left(t *testing.T) []string {
	t.Helper()
	var left []string
	filter := "label=com.docker.compose.project=" + p.Name
	for _, what := range [][]string{{"ps", "-a"}, {"network", "ls"}, {"volume", "ls"}} {
		args := append(slices.Clone(what), "--filter", filter, "--format", "{{.Name}}")
		if what[0] == "ps" {
			args[len(args)-1] = "{{.Names}}"
		}
		out := Docker(t, args...)
		for _, name := range strings.Fields(out) {
			left = append(left, what[0]+" "+name)
		}
	}
	return left
}

// ComposeContainer is what docker inspect says of a container.
type ComposeContainer struct {
	Name  string
	State struct {
		Status     string
		ExitCode   int
		StartedAt  time.Time
		FinishedAt time.Time
		Health     *struct{ Status string }
	}
	NetworkSettings struct {
		Networks map[string]struct{ IPAddress string }
	}
}

// Inspect is the container of service (its first replica).
func (p *ComposeProject) Inspect(t *testing.T, service string) ComposeContainer {
	t.Helper()
	id := strings.TrimSpace(p.Run(t, time.Minute, nil, "ps", "-a", "-q", service))
	if id == "" {
		t.Fatalf("no container of %s", service)
	}
	var cs []ComposeContainer
	if err := json.Unmarshal([]byte(Docker(t, "inspect", strings.Fields(id)[0])), &cs); err != nil || len(cs) != 1 {
		t.Fatalf("docker inspect %s: %v", service, err)
	}
	return cs[0]
}

// Docker runs the docker client (not compose) and fails the test if it
// fails.
func Docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, LastLines(string(out), 30))
	}
	return string(out)
}

// SQL runs a query with the mysql client inside service's container, as
// user with password on database, and returns its rows (tab-separated,
// no header).
func (p *ComposeProject) SQL(t *testing.T, service, user, password, database, query string) string {
	t.Helper()
	out := p.Run(t, time.Minute, nil, "exec", "-T", "-e", "MYSQL_PWD="+password, service, "mysql", "-u"+user, "-N", "-B", database, "-e", query)
	return strings.TrimSpace(out)
}

// LastLines is the last lines of s, with a line saying how many came before.
func LastLines(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = append([]string{fmt.Sprintf("... (%d lines before)", len(ls)-lines)}, ls[len(ls)-lines:]...)
	}
	return strings.Join(ls, "\n")
}
