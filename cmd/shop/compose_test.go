package main

import (
	"bufio"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.yaml.in/yaml/v3"
)

// No Docker engine runs on the project's machines, so the compose stack and
// the Dockerfile are checked by reading them.

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       *composeBuild     `yaml:"build"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Command     []string          `yaml:"command"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

type composeBuild struct {
	Context string `yaml:"context"`
	Target  string `yaml:"target"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// shopServices are the services that serve, built from the Dockerfile's
// shop stage (the migrate service is built from it too).
func shopServices(c composeFile) []string {
	var names []string
	for name, s := range c.Services {
		if s.Build != nil && s.Build.Target == "shop" && !slices.Contains(s.Command, "migrate") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func TestComposeStack(t *testing.T) {
	c := readCompose(t)
	shops := shopServices(c)
	if len(shops) < 2 {
		t.Fatalf("shop services %v, want two instances", shops)
	}
	known := map[string]bool{"SHOP_CONFIG": true}
	for _, s := range settings {
		known[envName(s.key)] = true
	}
	mysqlSvc, zkSvc := c.Services["mysql"], c.Services["zookeeper"]
	if mysqlSvc.Healthcheck == nil || zkSvc.Healthcheck == nil {
		t.Fatal("mysql and zookeeper need health checks for the shops' depends_on conditions")
	}

	t.Run("every SHOP_ variable is a configuration key", func(t *testing.T) {
		for name, s := range c.Services {
			for k := range s.Environment {
				if strings.HasPrefix(k, "SHOP_") && !known[k] {
					t.Errorf("service %s sets %s, which the shop does not read", name, k)
				}
			}
		}
	})
	t.Run("a one-shot shop migrate applies the schema before the shops start", func(t *testing.T) {
		if !strings.HasPrefix(mysqlSvc.Image, "mysql:8") {
			t.Errorf("mysql image %q, want MySQL 8", mysqlSvc.Image)
		}
		m, ok := c.Services["migrate"]
		if !ok || m.Build == nil || m.Build.Target != "shop" || !slices.Equal(m.Command, []string{"migrate"}) {
			t.Fatalf("no migrate service running the shop image's `migrate`: %+v", m)
		}
		if m.DependsOn["mysql"].Condition != "service_healthy" {
			t.Errorf("migrate depends_on mysql: %q, want service_healthy", m.DependsOn["mysql"].Condition)
		}
		if m.Environment["SHOP_MYSQL_DSN"] != c.Services[shops[0]].Environment["SHOP_MYSQL_DSN"] {
			t.Errorf("migrate's SHOP_MYSQL_DSN %q is not the shops'", m.Environment["SHOP_MYSQL_DSN"])
		}
		for _, name := range shops {
			if got := c.Services[name].DependsOn["migrate"].Condition; got != "service_completed_successfully" {
				t.Errorf("%s depends_on migrate: %q, want service_completed_successfully", name, got)
			}
		}
	})
	for _, name := range shops {
		s := c.Services[name]
		t.Run(name, func(t *testing.T) {
			_, port, err := net.SplitHostPort(s.Environment["SHOP_SERVER_ADDR"])
			if err != nil {
				t.Fatalf("SHOP_SERVER_ADDR: %v", err)
			}
			if len(s.Ports) != 1 || !strings.HasSuffix(s.Ports[0], ":"+port) {
				t.Errorf("ports %v do not publish the listen port %s", s.Ports, port)
			}
			if s.Healthcheck == nil || !strings.Contains(strings.Join(s.Healthcheck.Test, " "), ":"+port+"/readyz") {
				t.Errorf("health check does not probe /readyz on port %s", port)
			}
			for _, dep := range []string{"mysql", "zookeeper"} {
				if s.DependsOn[dep].Condition != "service_healthy" {
					t.Errorf("depends_on %s: condition %q, want service_healthy", dep, s.DependsOn[dep].Condition)
				}
			}
			cfg, err := mysql.ParseDSN(s.Environment["SHOP_MYSQL_DSN"])
			if err != nil {
				t.Fatalf("SHOP_MYSQL_DSN: %v", err)
			}
			host, _, _ := net.SplitHostPort(cfg.Addr)
			me := mysqlSvc.Environment
			if host != "mysql" || cfg.User != me["MYSQL_USER"] || cfg.Passwd != me["MYSQL_PASSWORD"] || cfg.DBName != me["MYSQL_DATABASE"] {
				t.Errorf("SHOP_MYSQL_DSN %q does not match the mysql service's user, password and database", s.Environment["SHOP_MYSQL_DSN"])
			}
			if zk := s.Environment["SHOP_ZOOKEEPER_SERVERS"]; !strings.HasPrefix(zk, "zookeeper:") {
				t.Errorf("SHOP_ZOOKEEPER_SERVERS %q is not the zookeeper service", zk)
			}
		})
	}
	t.Run("the load tester targets every shop", func(t *testing.T) {
		lt, ok := c.Services["loadtest"]
		if !ok || lt.Build == nil || lt.Build.Target != "loadtest" {
			t.Fatal("no loadtest service built from the Dockerfile's loadtest stage")
		}
		cmd := strings.Join(lt.Command, " ")
		for _, name := range shops {
			_, port, _ := net.SplitHostPort(c.Services[name].Environment["SHOP_SERVER_ADDR"])
			if !strings.Contains(cmd, "http://"+name+":"+port) {
				t.Errorf("loadtest command %q does not target %s:%s", cmd, name, port)
			}
			if lt.DependsOn[name].Condition != "service_healthy" {
				t.Errorf("loadtest does not wait for %s to be healthy", name)
			}
		}
	})
}

func TestDockerfile(t *testing.T) {
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type stage struct {
		name, user, expose string
		lines              []string
	}
	var stages []*stage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			st := &stage{}
			if len(fields) == 4 && strings.EqualFold(fields[2], "AS") {
				st.name = fields[3]
			}
			stages = append(stages, st)
		case "USER":
			stages[len(stages)-1].user = fields[1]
		case "EXPOSE":
			stages[len(stages)-1].expose = fields[1]
		}
		if len(stages) > 0 {
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		}
	}
	byName := map[string]*stage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	build := byName["build"]
	if build == nil || !strings.Contains(strings.Join(build.lines, "\n"), "CGO_ENABLED=0") {
		t.Fatal("no build stage making static (CGO_ENABLED=0) binaries")
	}
	for _, name := range []string{"shop", "loadtest"} {
		s := byName[name]
		if s == nil {
			t.Fatalf("no %s stage", name)
		}
		if s.user == "" || strings.HasPrefix(s.user, "root") || strings.HasPrefix(s.user, "0") {
			t.Errorf("stage %s runs as %q, want a non-root user", name, s.user)
		}
	}
	c := readCompose(t)
	for _, name := range shopServices(c) {
		_, port, _ := net.SplitHostPort(c.Services[name].Environment["SHOP_SERVER_ADDR"])
		if byName["shop"].expose != port {
			t.Errorf("the shop image exposes %q, %s listens on %s", byName["shop"].expose, name, port)
		}
	}
}
