package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/go-sql-driver/mysql"
	"go.yaml.in/yaml/v3"

	"github.com/seckill-zk/seckill-zk/internal/metrics"
	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// The compose stack and the Dockerfile read, in make test: their rules, with
// no engine. make test-compose runs them (tests/e2e/compose_test.go).

// readCompose loads docker-compose.yml with the compose-spec project's own
// loader, as docker compose does: the file checked against the spec's
// schema, ${VAR:-default} interpolated (from the defaults: the test's
// environment is not the deployment's), paths made absolute, every profile
// enabled.
func readCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"../../docker-compose.yml"}, cli.WithName("seckill"), cli.WithProfiles([]string{"*"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return p
}

// env is a service's environment variable, "" when unset.
func env(s types.ServiceConfig, name string) string {
	if v := s.Environment[name]; v != nil {
		return *v
	}
	return ""
}

// ports are a service's published ports as published:target.
func ports(s types.ServiceConfig) []string {
	var out []string
	for _, p := range s.Ports {
		out = append(out, fmt.Sprintf("%s:%d", p.Published, p.Target))
	}
	return out
}

// healthTest is a service's health check command, "" without one.
func healthTest(s types.ServiceConfig) string {
	if s.HealthCheck == nil {
		return ""
	}
	return strings.Join(s.HealthCheck.Test, " ")
}

// shopServices are the services that serve, built from the Dockerfile's
// shop stage (the migrate service is built from it too), of the default
// stack (profile "") or of a profile.
func shopServices(c *types.Project, profile ...string) []string {
	var names []string
	for name, s := range c.Services {
		if s.Build != nil && s.Build.Target == "shop" && !slices.Contains(s.Command, "migrate") && slices.Equal(s.Profiles, profile) {
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
	if healthTest(mysqlSvc) == "" || healthTest(zkSvc) == "" {
		t.Fatal("mysql and zookeeper need health checks for the shops' depends_on conditions")
	}

	t.Run("every SHOP_ variable is a configuration key, its value one the shop takes", func(t *testing.T) {
		for name, s := range c.Services {
			vars := map[string]string{}
			for k := range s.Environment {
				if strings.HasPrefix(k, "SHOP_") {
					vars[k] = env(s, k)
					if !known[k] {
						t.Errorf("service %s sets %s, which the shop does not read", name, k)
					}
				}
			}
			if len(vars) == 0 {
				continue
			}
			// As interpolated: ${SHOP_LOCK_ENABLED:-true} is "true" here.
			if _, err := load(t, vars); err != nil {
				t.Errorf("service %s: the shop refuses its environment: %v", name, err)
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
		if env(m, "SHOP_MYSQL_DSN") != env(c.Services[shops[0]], "SHOP_MYSQL_DSN") {
			t.Errorf("migrate's SHOP_MYSQL_DSN %q is not the shops'", env(m, "SHOP_MYSQL_DSN"))
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
			_, port, err := net.SplitHostPort(env(s, "SHOP_SERVER_ADDR"))
			if err != nil {
				t.Fatalf("SHOP_SERVER_ADDR: %v", err)
			}
			if p := ports(s); len(p) != 1 || !strings.HasSuffix(p[0], ":"+port) {
				t.Errorf("ports %v do not publish the listen port %s", p, port)
			}
			if !strings.Contains(healthTest(s), ":"+port+"/readyz") {
				t.Errorf("health check does not probe /readyz on port %s", port)
			}
			for _, dep := range []string{"mysql", "zookeeper"} {
				if s.DependsOn[dep].Condition != "service_healthy" {
					t.Errorf("depends_on %s: condition %q, want service_healthy", dep, s.DependsOn[dep].Condition)
				}
			}
			cfg, err := mysql.ParseDSN(env(s, "SHOP_MYSQL_DSN"))
			if err != nil {
				t.Fatalf("SHOP_MYSQL_DSN: %v", err)
			}
			host, _, _ := net.SplitHostPort(cfg.Addr)
			if host != "mysql" || cfg.User != env(mysqlSvc, "MYSQL_USER") || cfg.Passwd != env(mysqlSvc, "MYSQL_PASSWORD") || cfg.DBName != env(mysqlSvc, "MYSQL_DATABASE") {
				t.Errorf("SHOP_MYSQL_DSN %q does not match the mysql service's user, password and database", env(s, "SHOP_MYSQL_DSN"))
			}
			if zk := env(s, "SHOP_ZOOKEEPER_SERVERS"); !strings.HasPrefix(zk, "zookeeper:") {
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
			_, port, _ := net.SplitHostPort(env(c.Services[name], "SHOP_SERVER_ADDR"))
			if !strings.Contains(cmd, "http://"+name+":"+port) {
				t.Errorf("loadtest command %q does not target %s:%s", cmd, name, port)
			}
			if lt.DependsOn[name].Condition != "service_healthy" {
				t.Errorf("loadtest does not wait for %s to be healthy", name)
			}
		}
	})
}

// Prometheus scrapes every shop, and Grafana comes provisioned with a
// datasource on it and a dashboard whose queries name only metrics the shop
// exports, with the panels of the shop's own page.
func TestComposeMonitoring(t *testing.T) {
	c := readCompose(t)
	shops := shopServices(c)
	prom, ok := c.Services["prometheus"]
	if !ok || !strings.HasPrefix(prom.Image, "prom/prometheus") {
		t.Fatalf("no prometheus service: %+v", prom)
	}
	mounts := func(s types.ServiceConfig, dst string) string {
		for _, v := range s.Volumes {
			if v.Target == dst {
				return v.Source
			}
		}
		t.Fatalf("no volume mounted at %s in %v", dst, s.Volumes)
		return ""
	}
	var promCfg struct {
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, mounts(prom, "/etc/prometheus/prometheus.yml"), &promCfg)
	targets := map[string]bool{}
	for _, sc := range promCfg.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			t.Errorf("metrics_path %q, want /metrics", sc.MetricsPath)
		}
		for _, st := range sc.StaticConfigs {
			for _, tg := range st.Targets {
				targets[tg] = true
			}
		}
	}
	for _, name := range shops {
		_, port, _ := net.SplitHostPort(env(c.Services[name], "SHOP_SERVER_ADDR"))
		if !targets[name+":"+port] {
			t.Errorf("prometheus does not scrape %s:%s (targets %v)", name, port, targets)
		}
	}

	graf, ok := c.Services["grafana"]
	if !ok || !strings.HasPrefix(graf.Image, "grafana/grafana") {
		t.Fatalf("no grafana service: %+v", graf)
	}
	prov := mounts(graf, "/etc/grafana/provisioning")
	var ds struct {
		Datasources []struct {
			Type, URL, UID string
			IsDefault      bool `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	readYAML(t, prov+"/datasources/prometheus.yml", &ds)
	// The default Prometheus: the one the dashboard's datasource variable
	// (of type prometheus) picks.
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" || !ds.Datasources[0].IsDefault {
		t.Fatalf("grafana datasources %+v, want the prometheus service, the default", ds.Datasources)
	}
	var provider struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, prov+"/dashboards/seckill.yml", &provider)
	dashDir := mounts(graf, "/var/lib/grafana/dashboards")
	if len(provider.Providers) != 1 || provider.Providers[0].Options.Path != "/var/lib/grafana/dashboards" {
		t.Fatalf("dashboard provider %+v does not load the mounted folder", provider.Providers)
	}
	raw, err := os.ReadFile(dashDir + "/seckill.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title      string
			Datasource struct{ UID string }
			Targets    []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("seckill.json: %v", err)
	}
	exported := map[string]bool{}
	m := metrics.New("seed", nil) // one sample of each metric, so that every family shows
	m.Purchased(1, "ok", time.Millisecond)
	obs := m.LockObserver(func(string) string { return "/Locks" })
	obs.LockAcquired("/Locks", time.Millisecond)
	obs.LockReleased("/Locks", time.Millisecond)
	m.SampledQueue(1, "/Locks", 0)
	m.SampledGoods(1, metrics.GoodsSample{OrdersByStatus: map[string]int64{"unpaid": 0}})
	m.ZooKeeperState(zk.StateConnected)
	m.AdmissionStats(func() metrics.Admission { return metrics.Admission{} })
	m.RoomStats(func() metrics.Room { return metrics.Room{} })
	m.CoordinationStats(func() metrics.Coordination { return metrics.Coordination{Electing: true} })
	families, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		exported[f.GetName()] = true
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q uses datasource %q, not the dashboard's variable ${datasource} (the provisioned Prometheus in compose)", p.Title, p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			for _, name := range metricNameRE.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
				if !exported[base] {
					t.Errorf("panel %q queries %s, which the shop does not export", p.Title, name)
				}
				used[base] = true
			}
		}
	}
	for _, want := range []string{"seckill_stock", "seckill_orders_total", "seckill_purchases_total", "seckill_lock_wait_seconds",
		"seckill_lock_queue_length", "seckill_zookeeper_state", "seckill_leader", "seckill_admission_limit", "seckill_admission_refused_total",
		"seckill_zookeeper_paths_owned", "seckill_leader_queued", "seckill_leader_participants", "seckill_zookeeper_noauth_total"} {
		if !used[want] {
			t.Errorf("no panel shows %s", want)
		}
	}
}

var metricNameRE = regexp.MustCompile(`seckill_[a-z_]+`)

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
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
		_, port, _ := net.SplitHostPort(env(c.Services[name], "SHOP_SERVER_ADDR"))
		if byName["shop"].expose != port {
			t.Errorf("the shop image exposes %q, %s listens on %s", byName["shop"].expose, name, port)
		}
	}
}

// The profile "cluster": three ZooKeeper servers in one ensemble, three
// Galera nodes of one cluster (one bootstraps, the others join it), and
// three instances, each on its own node and ZooKeeper server, its DSN
// listing the other nodes after its own (the store's failover).
func TestComposeCluster(t *testing.T) {
	c := readCompose(t)
	profile := func(name string) types.ServiceConfig {
		t.Helper()
		s, ok := c.Services[name]
		if !ok || !slices.Equal(s.Profiles, []string{"cluster"}) {
			t.Fatalf("no service %s in the profile cluster", name)
		}
		return s
	}
	nodes := []string{"galera1", "galera2", "galera3"}
	zks := []string{"zk1", "zk2", "zk3"}

	t.Run("one ZooKeeper ensemble", func(t *testing.T) {
		servers := env(profile("zk1"), "ZOO_SERVERS")
		for i, name := range zks {
			s := profile(name)
			if env(s, "ZOO_MY_ID") != strconv.Itoa(i+1) || env(s, "ZOO_SERVERS") != servers {
				t.Errorf("%s: ZOO_MY_ID %q, ZOO_SERVERS %q; want id %d in the ensemble %q", name, env(s, "ZOO_MY_ID"), env(s, "ZOO_SERVERS"), i+1, servers)
			}
			if !strings.Contains(servers, fmt.Sprintf("server.%d=%s:", i+1, name)) {
				t.Errorf("ZOO_SERVERS %q lacks %s", servers, name)
			}
		}
	})
	t.Run("one Galera cluster", func(t *testing.T) {
		cnf, err := os.ReadFile("../../deploy/galera/galera.cnf")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"wsrep_on = ON", "wsrep_provider = /usr/lib/galera/libgalera_smm.so",
			"wsrep_cluster_address = gcomm://galera1,galera2,galera3", "wsrep_sst_method = mariabackup",
			"binlog_format = ROW", "innodb_autoinc_lock_mode = 2"} {
			if !strings.Contains(string(cnf), want) {
				t.Errorf("deploy/galera/galera.cnf lacks %q", want)
			}
		}
		bootstraps := 0
		for _, name := range nodes {
			s := profile(name)
			if !strings.HasPrefix(s.Image, "mariadb:") {
				t.Errorf("%s image %q, want MariaDB's (it ships Galera)", name, s.Image)
			}
			if !slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
				return v.Target == "/etc/mysql/conf.d/galera.cnf" && v.ReadOnly && strings.HasSuffix(v.Source, "/deploy/galera/galera.cnf")
			}) {
				t.Errorf("%s does not mount deploy/galera/galera.cnf", name)
			}
			if !slices.Contains(s.Command, "--wsrep-node-address="+name) {
				t.Errorf("%s command %v lacks --wsrep-node-address=%s", name, s.Command, name)
			}
			if slices.Contains(s.Command, "--wsrep-new-cluster") {
				bootstraps++
			} else if s.DependsOn["galera1"].Condition != "service_healthy" {
				t.Errorf("%s joins before galera1 is healthy", name)
			}
			if !strings.Contains(healthTest(s), "Synced") {
				t.Errorf("%s: the health check does not wait for Synced", name)
			}
		}
		if bootstraps != 1 || !slices.Contains(profile("galera1").Command, "--wsrep-new-cluster") {
			t.Errorf("%d nodes bootstrap, want galera1 alone", bootstraps)
		}
	})
	shops := shopServices(c, "cluster")
	if len(shops) != 3 {
		t.Fatalf("cluster shops %v, want three", shops)
	}
	galera1 := profile("galera1")
	for i, name := range shops {
		s := c.Services[name]
		t.Run(name, func(t *testing.T) {
			dsn := env(s, "SHOP_MYSQL_DSN")
			m := regexp.MustCompile(`^([^:]+):([^@]+)@tcp\(([^)]*)\)/(\w+)$`).FindStringSubmatch(dsn)
			if m == nil {
				t.Fatalf("SHOP_MYSQL_DSN %q is not user:password@tcp(node,node,node)/db", dsn)
			}
			if m[1] != env(galera1, "MARIADB_USER") || m[2] != env(galera1, "MARIADB_PASSWORD") || m[4] != env(galera1, "MARIADB_DATABASE") {
				t.Errorf("SHOP_MYSQL_DSN %q does not match the nodes' user, password and database", dsn)
			}
			var hosts []string
			for _, a := range strings.Split(m[3], ",") {
				host, _, _ := strings.Cut(a, ":")
				hosts = append(hosts, host)
			}
			if len(hosts) != 3 || hosts[0] != nodes[i] || !slices.Contains(hosts, "galera1") || !slices.Contains(hosts, "galera2") || !slices.Contains(hosts, "galera3") {
				t.Errorf("SHOP_MYSQL_DSN lists %v; want %s first, then the other nodes", hosts, nodes[i])
			}
			if zk := env(s, "SHOP_ZOOKEEPER_SERVERS"); zk != zks[i]+":2181" {
				t.Errorf("SHOP_ZOOKEEPER_SERVERS %q, want its own server %s:2181", zk, zks[i])
			}
			for _, dep := range append(slices.Clone(nodes), zks...) {
				if s.DependsOn[dep].Condition != "service_healthy" {
					t.Errorf("depends_on %s: %q, want service_healthy", dep, s.DependsOn[dep].Condition)
				}
			}
			if s.DependsOn["cluster-migrate"].Condition != "service_completed_successfully" {
				t.Error("does not wait for cluster-migrate")
			}
			_, port, _ := net.SplitHostPort(env(s, "SHOP_SERVER_ADDR"))
			if p := ports(s); len(p) != 1 || p[0] != fmt.Sprintf("%d:%s", 8091+i, port) {
				t.Errorf("ports %v, want %d:%s", p, 8091+i, port)
			}
		})
	}
	t.Run("the load tester targets every cluster shop", func(t *testing.T) {
		cmd := strings.Join(profile("cluster-loadtest").Command, " ")
		for _, name := range shops {
			if !strings.Contains(cmd, "http://"+name+":8080") {
				t.Errorf("cluster-loadtest %q does not target %s", cmd, name)
			}
		}
	})
}
