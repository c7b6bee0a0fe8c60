package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/metrics/scrape"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The demo stack in real containers (make test-compose): docker-compose.yml
// run with the commands its header, the README and docs/operations.md give,
// on the engine scripts/containers.sh starts, each official image replaced
// by a stand-in built here (the test logs which). Not in make test: it
// needs that engine.

// composeBuyers is the loadtest service's crowd, composeStock the seed's.
const (
	composeBuyers = 1500
	composeStock  = 100
)

// composeStandIns logs which official image each stand-in took the place
// of: what the run leaves unchecked is theirs.
func composeStandIns(t *testing.T) {
	defaults := map[string]string{"GO_IMAGE": "golang:1.26", "BASE_IMAGE": "gcr.io/distroless/static-debian12:nonroot",
		"ZOOKEEPER_IMAGE": "zookeeper:3.8", "MYSQL_IMAGE": "mysql:8.0", "MARIADB_IMAGE": "mariadb:11.4",
		"PROMETHEUS_IMAGE": "prom/prometheus:v3.5.0", "GRAFANA_IMAGE": "grafana/grafana:12.1.0"}
	for _, v := range e2e.ComposeStandIns {
		t.Logf("%s=%s stands in for %s", v, os.Getenv(v), defaults[v])
	}
}

func TestTheComposeStack(t *testing.T) {
	composeStandIns(t)
	p := e2e.NewComposeProject(t, "../..", "seckill-compose-test")
	t.Run("up", func(t *testing.T) { composeUp(t, p) })
	t.Run("loadtest", func(t *testing.T) { composeLoadtest(t, p) })
	t.Run("lock off oversells", func(t *testing.T) { composeLockOff(t, p) })
	t.Run("kill the sweeper mid-sale", func(t *testing.T) { composeKill(t, p) })
	t.Run("down", func(t *testing.T) {
		p.Run(t, 3*time.Minute, nil, "down", "-v")
		if left := p.Left(t); len(left) > 0 {
			t.Errorf("docker compose down -v left %v", left)
		}
	})
}

// composeUp: up --build --wait; the migration ends before either shop
// starts, both are healthy, and Prometheus scrapes both.
func composeUp(t *testing.T, p *e2e.ComposeProject) {
	p.Run(t, 20*time.Minute, nil, "up", "--build", "--wait", "--wait-timeout", "300")
	m := p.Inspect(t, "migrate")
	if m.State.Status != "exited" || m.State.ExitCode != 0 {
		t.Fatalf("migrate: %s, exit code %d", m.State.Status, m.State.ExitCode)
	}
	for _, s := range []string{"shop1", "shop2"} {
		c := p.Inspect(t, s)
		if !c.State.StartedAt.After(m.State.FinishedAt) {
			t.Errorf("%s started at %v, before the migration ended (%v)", s, c.State.StartedAt, m.State.FinishedAt)
		}
		if c.State.Health == nil || c.State.Health.Status != "healthy" {
			t.Errorf("%s: health %+v", s, c.State.Health)
		}
	}
	want := []string{"shop1:8080", "shop2:8080"}
	var up []string
	if !e2e.WaitUntil(time.Minute, func() bool { up = prometheusUp(); return slices.Equal(up, want) }) {
		t.Fatalf("Prometheus' targets up: %v, want %v", up, want)
	}
}

// prometheusUp is the scrape targets Prometheus (127.0.0.1:9090) reports
// up, sorted.
func prometheusUp() []string {
	a := e2e.Ask(http.MethodGet, "http://127.0.0.1:9090/api/v1/targets")
	var r struct {
		Data struct {
			ActiveTargets []struct {
				Health string
				Labels map[string]string
			}
		}
	}
	if a.Err != nil || json.Unmarshal(a.Body, &r) != nil {
		return nil
	}
	var up []string
	for _, x := range r.Data.ActiveTargets {
		if x.Health == "up" {
			up = append(up, x.Labels["instance"])
		}
	}
	slices.Sort(up)
	return up
}

// composeLoadtest: the loadtest service's 1500 buyers sell the 100 pieces
// exactly, and stock set --clear-orders resets the sale.
func composeLoadtest(t *testing.T, p *e2e.ComposeProject) {
	out := p.Run(t, 5*time.Minute, nil, "run", "--rm", "loadtest")
	t.Logf("loadtest:\n%s", e2e.LastLines(out, 12))
	stock, orders, sold := composeCounts(t, p)
	if stock != 0 || orders != composeStock || sold != composeStock {
		t.Errorf("after the loadtest: stock %d, %d order rows, %d sold by the stock; want 0, %d, %d", stock, orders, sold, composeStock, composeStock)
	}
	composeReset(t, p)
}

// composeReset is the stack's own reset: stock set --clear-orders in shop1.
func composeReset(t *testing.T, p *e2e.ComposeProject) {
	t.Helper()
	p.Run(t, time.Minute, nil, "exec", "shop1", "/shop", "stock", "set", "--goods", "1", "--stock", strconv.Itoa(composeStock), "--clear-orders")
	if stock, orders, _ := composeCounts(t, p); stock != composeStock || orders != 0 {
		t.Fatalf("after stock set: stock %d, %d order rows", stock, orders)
	}
}

// composeCounts reads goods 1's stock, its order rows, and the pieces the
// stock lost (composeStock less the stock), through the mysql service.
func composeCounts(t *testing.T, p *e2e.ComposeProject) (stock, orders, sold int) {
	t.Helper()
	stock, orders = goodsCounts(t, p, "mysql")
	return stock, orders, composeStock - stock
}

// goodsCounts reads goods 1's stock and order rows with the mysql client
// of the database service db.
func goodsCounts(t *testing.T, p *e2e.ComposeProject, db string) (stock, orders int) {
	t.Helper()
	row := strings.Fields(p.SQL(t, db, "seckill", "seckill", "seckill",
		"SELECT (SELECT stock FROM goods_stock WHERE goods_no = 1), (SELECT COUNT(*) FROM order_info WHERE goods_no = 1)"))
	if len(row) != 2 {
		t.Fatalf("the counts: %q", row)
	}
	stock, _ = strconv.Atoi(row[0])
	orders, _ = strconv.Atoi(row[1])
	return stock, orders
}

// composeLockOff: SHOP_LOCK_ENABLED=false up -d, the loadtest oversells;
// then the lock back on and the sale reset.
func composeLockOff(t *testing.T, p *e2e.ComposeProject) {
	off := []string{"SHOP_LOCK_ENABLED=false"}
	p.Run(t, 5*time.Minute, off, "up", "-d")
	out := p.Run(t, 5*time.Minute, off, "run", "--rm", "loadtest")
	t.Logf("loadtest, the lock off:\n%s", e2e.LastLines(out, 12))
	_, orders, sold := composeCounts(t, p)
	if orders <= sold {
		t.Errorf("the lock off: %d order rows for %d pieces the stock lost: nothing oversold", orders, sold)
	}
	t.Logf("the lock off: %d order rows for %d pieces the stock lost", orders, sold)
	p.Run(t, 5*time.Minute, nil, "up", "-d", "--wait", "--wait-timeout", "300")
	composeReset(t, p)
}

// composeKill: one sweeper leads across the two containers; its container
// is killed mid-sale (docker compose kill); the other shop sells the rest,
// nothing is oversold, and the other leads the sweeper.
func composeKill(t *testing.T, p *e2e.ComposeProject) {
	ports := map[string]string{"shop1": "8081", "shop2": "8082"}
	// A slower sale (the demo's sleep up to 300 ms), so that the kill lands in it.
	slow := []string{"SHOP_DEMO_MAXSLEEP=300ms"}
	p.Run(t, 5*time.Minute, slow, "up", "-d", "--wait", "--wait-timeout", "300")
	var leaders []string
	if !e2e.WaitUntil(time.Minute, func() bool { leaders = composeLeaders(ports); return len(leaders) == 1 }) {
		t.Fatalf("sweeper leaders %v, want one", leaders)
	}
	leader, other := leaders[0], map[string]string{"shop1": "shop2", "shop2": "shop1"}[leaders[0]]
	t.Logf("%s leads the sweeper", leader)
	done := make(chan string, 1)
	go func() {
		out, _ := p.Try(context.Background(), slow, "run", "--rm", "loadtest") // the killed shop's buyers fail
		done <- out
	}()
	var sold int
	if !e2e.WaitUntil(2*time.Minute, func() bool { _, _, sold = composeCounts(t, p); return sold >= 10 }) {
		t.Fatalf("the sale did not start: %d sold", sold)
	}
	p.Run(t, time.Minute, slow, "kill", leader)
	_, atKill, _ := composeCounts(t, p)
	t.Logf("killed %s with %d order rows", leader, atKill)
	if !e2e.WaitUntil(2*time.Minute, func() bool { leaders = composeLeaders(ports); return slices.Equal(leaders, []string{other}) }) {
		t.Errorf("sweeper leaders %v after %s was killed, want %s", leaders, leader, other)
	}
	select {
	case out := <-done:
		t.Logf("loadtest, %s killed:\n%s", leader, e2e.LastLines(out, 12))
	case <-time.After(5 * time.Minute):
		t.Fatal("the loadtest did not end within 5 minutes of the kill")
	}
	stock, orders, sold := composeCounts(t, p)
	if orders != sold {
		t.Errorf("%d order rows for %d pieces the stock lost", orders, sold)
	}
	if orders <= atKill || stock != 0 {
		t.Errorf("%s did not sell on: %d order rows at the kill, %d at the end, stock %d", other, atKill, orders, stock)
	}
}

// composeLeaders are the shops whose metrics (on their published ports)
// say they lead the sweeper's election.
func composeLeaders(ports map[string]string) []string {
	var out []string
	for name, port := range ports {
		a := e2e.Ask(http.MethodGet, "http://127.0.0.1:"+port+"/metrics")
		if a.Err != nil {
			continue
		}
		samples, err := scrape.Parse(bytes.NewReader(a.Body))
		if err != nil {
			continue
		}
		for _, s := range samples {
			if s.Name == "seckill_leader" && s.Value == 1 {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}
