package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill-zk/seckill-zk/internal/metrics"
)

// metricValue reads one sample of /metrics, parsed by Prometheus' own
// parser (metrics.ParseText): the one whose name{labels} (labels sorted by
// name, as the exposition writes them) is series, or whose name is series.
func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	samples, err := metrics.ParseText(resp.Body)
	if err != nil {
		t.Fatalf("/metrics of %s: %v", base, err)
	}
	for _, x := range samples {
		keys := slices.Sorted(maps.Keys(x.Labels))
		var pairs []string
		for _, k := range keys {
			pairs = append(pairs, fmt.Sprintf("%s=%q", k, x.Labels[k]))
		}
		name := x.Name
		if len(pairs) > 0 {
			name += "{" + strings.Join(pairs, ",") + "}"
		}
		if name == series {
			return x.Value
		}
	}
	t.Fatalf("/metrics of %s has no %s", base, series)
	return 0
}

// Known purchases read back from /metrics: 20 bought and 40 sold out, one
// bad goods number (no goods label of its own), and the gauges the sampler
// keeps.
func TestMetricsCountThePurchases(t *testing.T) {
	s := newStack(t, "SHOP_ORDERS_PAYTIMEOUT=1h")
	s.shop(t, "migrate")
	s.shop(t, "stock", "set", "--goods", "1", "--stock", "20", "--clear-orders")
	in := s.serve(t)
	got := buy(t, []string{in.url}, 60)
	if got.status[200] != 20 || got.status[409] != 40 {
		t.Fatalf("answers %v, want 20 × 200 and 40 × 409", got.status)
	}
	if resp, err := http.Get(in.url + "/goods-stock/x"); err == nil {
		resp.Body.Close()
	}
	checks := []struct {
		series string
		want   float64
	}{
		{`seckill_purchases_total{goods="1",outcome="ok",strategy="seed"}`, 20},
		{`seckill_purchases_total{goods="1",outcome="sold_out",strategy="seed"}`, 40},
		{`seckill_purchases_total{goods="-",outcome="invalid_goods_no",strategy="seed"}`, 1},
		{`seckill_purchase_duration_seconds_count{outcome="ok"}`, 20},
		{`seckill_zookeeper_state`, 1},
		{`seckill_leader`, 1},
	}
	for _, c := range checks {
		if v := metricValue(t, in.url, c.series); v != c.want {
			t.Errorf("%s = %v, want %v", c.series, v, c.want)
		}
	}
	// Every sale took the lock once; sold-out buyers after the mark did not.
	if v := metricValue(t, in.url, `seckill_lock_wait_seconds_count{path="`+s.lockPath+`"}`); v < 20 || v > 60 {
		t.Errorf("lock waits %v, want between the 20 sales and the 60 buyers", v)
	}
	// The sampler catches up within a second or two.
	if !waitUntil(10*time.Second, func() bool {
		return metricValue(t, in.url, `seckill_stock{goods="1"}`) == 0 &&
			metricValue(t, in.url, `seckill_orders_total{goods="1",status="unpaid"}`) == 20
	}) {
		t.Errorf("stock gauge %v, unpaid orders gauge %v; want 0 and 20", metricValue(t, in.url, `seckill_stock{goods="1"}`),
			metricValue(t, in.url, `seckill_orders_total{goods="1",status="unpaid"}`))
	}
	if v := metricValue(t, in.url, `seckill_lock_queue_length{path="`+s.lockPath+`"}`); v != 0 {
		t.Errorf("lock queue %v after the sale, want 0", v)
	}
	if v := metricValue(t, in.url, `go_sql_max_open_connections{db_name="seckill"}`); v != 100 {
		t.Errorf("pool collector: max open connections %v, want 100", v)
	}
}

// chromium finds Debian's Chromium, or fails saying how to install it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed: the dashboard's browser test needs Debian's chromium " +
		"(scripts/stack.sh up installs it, or: apt-get install chromium)")
	return ""
}

var numberRE = regexp.MustCompile(`^-?\d+$`)

// The dashboard in a real (headless) browser, opened after a small load over
// two instances began: its charts draw the sale from before the page was
// opened (the instances' history), and once the load is over the numbers it
// shows for each instance match GET /goods/1. DASHBOARD_SCREENSHOT=file
// saves what it showed.
func TestDashboardShowsTheSaleLive(t *testing.T) {
	browser := chromium(t)
	s := newStack(t, "SHOP_ORDERS_PAYTIMEOUT=1h", "SHOP_DEMO_MAXSLEEP=20ms")
	s.shop(t, "migrate")
	s.shop(t, "stock", "set", "--goods", "1", "--stock", "40", "--clear-orders")
	// The instances know each other by address (dashboard.peers, the same
	// list on both, as in a deployment): a's page reads b's data only
	// because b lists a.
	addrs := freeAddrs(t, 2)
	peers := "SHOP_DASHBOARD_PEERS=http://" + addrs[0] + ",http://" + addrs[1]
	a, b := s.serveOn(t, addrs[0], peers), s.serveOn(t, addrs[1], peers)
	for _, tc := range []struct{ origin, allowed string }{{a.url, a.url}, {"http://evil.example", ""}} {
		req, err := http.NewRequest(http.MethodGet, b.url+"/dashboard/data?goods=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", tc.origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.allowed {
			t.Errorf("b's data for a page of %s: Access-Control-Allow-Origin %q, want %q", tc.origin, got, tc.allowed)
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// A goods that does not exist is not charted as one with no stock.
	if resp, err := http.Get(a.url + "/dashboard/data?goods=999"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /dashboard/data?goods=999: %v %v, want 404", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}

	// Each instance samples at its start; the load begins once both have a
	// point, so that the history the page draws holds the sale's start.
	for _, in := range []*instance{a, b} {
		if !waitUntil(30*time.Second, func() bool { return len(dashboardHistory(t, in.url)) > 0 }) {
			t.Fatalf("%s has no sampled point 30 s after its start", in.url)
		}
	}
	loadStart := time.Now()
	loadDone := make(chan outcome, 1)
	go func() { loadDone <- buyPaced([]string{a.url, b.url}, 120, 8) }()
	waitUntil(30*time.Second, func() bool { _, orders := s.counts(t); return orders >= 10 })
	opened := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(a.url+"/dashboard")); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}

	// The charts draw at once, from before the page was opened.
	var points, t0 int64
	if !waitUntil(5*time.Second, func() bool {
		var err error
		points, err = chromedp.Run(ctx, chromedp.Evaluate[int64](
			`Math.min(...["stock","rate","queue"].map(c => Math.max(0, ...[...document.querySelectorAll("#c-"+c+" polyline")].map(p => +p.dataset.points))))`))
		if err != nil {
			return false
		}
		t0, err = chromedp.Run(ctx, chromedp.Evaluate[int64](`+document.getElementById("c-stock").dataset.t0 || 0`))
		return err == nil && points >= 3 && t0 > 0
	}) {
		t.Fatalf("the charts did not draw within 5 s of opening (fewest points %d)", points)
	}
	if t0 > loadStart.UnixMilli() {
		t.Errorf("opened %v after the load began, the stock chart starts %v after it: want the sale from its start",
			opened.Sub(loadStart).Round(time.Millisecond), time.UnixMilli(t0).Sub(loadStart).Round(time.Millisecond))
	}
	if lines, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#c-stock polyline").length`)); err != nil || lines != 2 {
		t.Errorf("the stock chart has %d lines (%v), want 2 (stock and order rows, the database's, once)", lines, err)
	}
	got := <-loadDone
	if got.status[200] != 40 {
		t.Fatalf("the load: %v, want 40 sales", got.status)
	}

	// Then the numbers it shows match the database's, for both instances.
	stock, orders := s.counts(t)
	want := map[string]string{"stock": strconv.Itoa(stock), "orders": strconv.Itoa(orders)}
	var shown map[string]string
	if !waitUntil(30*time.Second, func() bool {
		shown = map[string]string{}
		for peer := range 2 {
			for _, f := range []string{"stock", "orders", "sold", "soldOut", "leader"} {
				sel := chromedp.CSS(fmt.Sprintf(`td[data-peer="%d"][data-field="%s"]`, peer, f))
				v, err := chromedp.Run(ctx, chromedp.Text(sel))
				if err != nil {
					return false
				}
				shown[fmt.Sprint(peer, f)] = strings.TrimSpace(v)
			}
		}
		for peer := range 2 {
			for f, w := range want {
				if shown[fmt.Sprint(peer, f)] != w {
					return false
				}
			}
		}
		return true
	}) {
		t.Fatalf("the dashboard shows %v, GET /goods/1 says stock %d, %d order rows", shown, stock, orders)
	}
	sold := 0
	for peer := range 2 {
		v := shown[fmt.Sprint(peer, "sold")]
		if !numberRE.MatchString(v) {
			t.Fatalf("peer %d sold %q", peer, v)
		}
		n, _ := strconv.Atoi(v)
		sold += n
	}
	if sold != 40 {
		t.Errorf("the instances show %d sales together, want 40", sold)
	}
	if (shown["0leader"] == "") == (shown["1leader"] == "") {
		t.Errorf("leader cells %q and %q: want exactly one instance leading", shown["0leader"], shown["1leader"])
	}
	if f := os.Getenv("DASHBOARD_SCREENSHOT"); f != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", f)
	}
}

// buyPaced sends n purchases of goods 1, conc at a time, round-robin over
// bases, and counts the answers.
func buyPaced(bases []string, n, conc int) outcome {
	answers, _ := closedLoad(bases, n, conc)
	out := outcome{status: map[int]int{}, codes: map[string]int{}}
	for _, a := range answers {
		out.status[a.status]++
		out.codes[a.code]++
	}
	return out
}

// dashboardHistory is the points of goods 1 an instance's dashboard data
// holds (none on any error).
func dashboardHistory(t *testing.T, url string) []json.RawMessage {
	t.Helper()
	resp, err := http.Get(url + "/dashboard/data?goods=1&history=1")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var d struct {
		History []json.RawMessage `json:"history"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&d) != nil {
		return nil
	}
	return d.History
}

// freeAddrs are n loopback addresses with a port free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ln.Addr().String())
		defer ln.Close()
	}
	return out
}
