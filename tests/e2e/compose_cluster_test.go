package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The compose file's profile "cluster" in real containers (make
// test-compose): three ZooKeeper servers, three Galera nodes and three
// shops, started with the file's own commands; a sale exact; then sales of
// the chaos suite's buyers (chaos_test.go: purchases, payments and reads,
// every operation checked against the model) through one Galera node's
// container killed mid-sale, and through another cut off its network.

var clusterShops = []string{"cshop1", "cshop2", "cshop3"}

func TestTheComposeClusterProfile(t *testing.T) {
	composeStandIns(t)
	p := e2e.NewComposeProject(t, "../..", "seckill-compose-cluster")
	p.Env = []string{"COMPOSE_PROFILES=cluster"} // for the commands the docs give without --profile
	cluster := []string{"--profile", "cluster"}
	p.Run(t, 20*time.Minute, nil, append(cluster, "up", "--build", "--wait", "--wait-timeout", "600", "cshop1", "cshop2", "cshop3")...)
	t.Run("formed", func(t *testing.T) { clusterFormed(t, p) })
	t.Run("loadtest", func(t *testing.T) {
		out := p.Run(t, 5*time.Minute, nil, append(cluster, "run", "--rm", "cluster-loadtest")...)
		t.Logf("cluster-loadtest:\n%s", e2e.LastLines(out, 12))
		stock, orders := goodsCounts(t, p, "galera1")
		if stock != 0 || orders != composeStock {
			t.Errorf("after the loadtest: stock %d, %d order rows; want 0, %d", stock, orders, composeStock)
		}
	})
	t.Run("a Galera node killed mid-sale", func(t *testing.T) {
		clusterSale(t, p, chaosConfigFromEnv(t), func(t *testing.T, l *buyerLoad) (time.Time, time.Time) {
			p.Run(t, time.Minute, nil, "kill", "galera3")
			at := time.Now()
			l.AfterSale(func() {
				p.Run(t, 5*time.Minute, nil, append(cluster, "up", "-d", "--wait", "--wait-timeout", "300", "galera3")...)
			})
			return at, at
		})
	})
	t.Run("a Galera node cut off its network mid-sale", func(t *testing.T) {
		net := p.Name + "_default"
		node := strings.TrimPrefix(p.Inspect(t, "galera2").Name, "/")
		// galera2 writes goods 1 (node 1 mod 3 of the sorted list): the shops
		// sold again about 80 s after the cut in the runs here (docs/galera.md).
		// The buyers keep coming for 50 s, and wait, so that the sale after it
		// shows.
		cfg := chaosConfigFromEnv(t)
		cfg.buyers = int(50 * cfg.rate)
		clusterSale(t, p, cfg, func(t *testing.T, l *buyerLoad) (time.Time, time.Time) {
			e2e.Docker(t, "network", "disconnect", net, node)
			at := time.Now()
			l.AfterSale(func() { e2e.Docker(t, "network", "connect", "--alias", "galera2", net, node) })
			return at, at
		})
	})
	t.Run("down", func(t *testing.T) {
		p.Run(t, 3*time.Minute, nil, append(cluster, "down", "-v")...)
		if left := p.Left(t); len(left) > 0 {
			t.Errorf("docker compose down -v left %v", left)
		}
	})
}

// clusterFormed: one ZooKeeper leader and two followers (a server's health
// check, ruok, answers before it has joined: the modes are read for up to
// a minute), three Galera nodes in one primary component.
func clusterFormed(t *testing.T, p *e2e.ComposeProject) {
	var modes map[string]int
	formed := e2e.WaitUntil(time.Minute, func() bool {
		modes = map[string]int{}
		for _, zk := range []string{"zk1", "zk2", "zk3"} {
			out, _ := p.Try(context.Background(), nil, "exec", "-T", zk, "bash", "-c", "echo srvr | nc -w 2 127.0.0.1 2181")
			for _, line := range strings.Split(out, "\n") {
				if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
					modes[strings.TrimSpace(mode)]++
				}
			}
		}
		return modes["leader"] == 1 && modes["follower"] == 2
	})
	if !formed {
		t.Errorf("ZooKeeper's modes %v, want one leader and two followers", modes)
	}
	row := strings.Fields(p.SQL(t, "galera1", "root", "root", "seckill",
		"SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('wsrep_cluster_size', 'wsrep_cluster_status') ORDER BY VARIABLE_NAME"))
	if len(row) != 2 || row[0] != "3" || row[1] != "Primary" {
		t.Errorf("Galera: cluster size and status %v, want 3 Primary", row)
	}
}

// clusterSale resets the sale (stock set --clear-orders in cshop1) and runs
// the chaos suite's sale (cfg) over the three shops' published ports with
// fault f, its checks reading galera1 and the ZooKeeper servers at their
// containers' addresses.
func clusterSale(t *testing.T, p *e2e.ComposeProject, cfg chaosConfig, f fault) {
	p.Run(t, time.Minute, nil, "exec", "cshop1", "/shop", "stock", "set", "--goods", "1", "--stock", strconv.Itoa(cfg.stock), "--clear-orders")
	s := e2e.Stack{DSN: fmt.Sprintf("seckill:seckill@tcp(%s:3306)/seckill", containerIP(t, p, "galera1")), LockPath: "/Locks"}
	for _, zk := range []string{"zk1", "zk2", "zk3"} {
		s.ZKServers = append(s.ZKServers, containerIP(t, p, zk)+":2181")
	}
	var instances []*e2e.Instance
	for i, name := range clusterShops {
		instances = append(instances, &e2e.Instance{URL: fmt.Sprintf("http://127.0.0.1:%d", 8091+i), Logs: func() string {
			out, _ := p.Try(context.Background(), nil, "logs", "--tail", "50", name)
			return out
		}})
	}
	runChaos(t, cfg, s, instances, f)
	if t.Failed() {
		for i, in := range instances {
			t.Logf("%s's last lines:\n%s", clusterShops[i], in.Logs())
		}
	}
}

// containerIP is service's address on the project's network: the host
// reaches it (the engine's bridge), as the tests' checks do.
func containerIP(t *testing.T, p *e2e.ComposeProject, service string) string {
	t.Helper()
	for _, n := range p.Inspect(t, service).NetworkSettings.Networks {
		if n.IPAddress != "" {
			return n.IPAddress
		}
	}
	t.Fatalf("%s has no address", service)
	return ""
}
