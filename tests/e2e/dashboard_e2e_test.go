package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// Known purchases read back from /metrics: 20 bought and 40 sold out, one
// bad goods number (no goods label of its own), and the gauges the sampler
// keeps.
func TestMetricsCountThePurchases(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithPayTimeout(time.Hour))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "20", "--clear-orders")
	in := s.Serve(t)
	got := e2e.Buy(t, []string{in.URL}, 60)
	if got.Status[200] != 20 || got.Status[409] != 40 {
		t.Fatalf("answers %v, want 20 × 200 and 40 × 409", got.Status)
	}
	e2e.Ask(http.MethodGet, in.URL+"/goods-stock/x") // counted as invalid_goods
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
		if v := e2e.MetricValue(t, in.URL, c.series); v != c.want {
			t.Errorf("%s = %v, want %v", c.series, v, c.want)
		}
	}
	// Every sale took the lock once; sold-out buyers after the mark did not.
	if v := e2e.MetricValue(t, in.URL, `seckill_lock_wait_seconds_count{path="`+s.LockPath+`"}`); v < 20 || v > 60 {
		t.Errorf("lock waits %v, want between the 20 sales and the 60 buyers", v)
	}
	// The sampler catches up within a second or two.
	if !e2e.WaitUntil(10*time.Second, func() bool {
		return e2e.MetricValue(t, in.URL, `seckill_stock{goods="1"}`) == 0 &&
			e2e.MetricValue(t, in.URL, `seckill_orders_total{goods="1",status="unpaid"}`) == 20
	}) {
		t.Errorf("stock gauge %v, unpaid orders gauge %v; want 0 and 20", e2e.MetricValue(t, in.URL, `seckill_stock{goods="1"}`),
			e2e.MetricValue(t, in.URL, `seckill_orders_total{goods="1",status="unpaid"}`))
	}
	if v := e2e.MetricValue(t, in.URL, `seckill_lock_queue_length{path="`+s.LockPath+`"}`); v != 0 {
		t.Errorf("lock queue %v after the sale, want 0", v)
	}
	if v := e2e.MetricValue(t, in.URL, `go_sql_max_open_connections{db_name="seckill"}`); v != 100 {
		t.Errorf("pool collector: max open connections %v, want 100", v)
	}
}

var numberRE = regexp.MustCompile(`^-?\d+$`)

// The dashboard in a real (headless) browser, opened after a small load over
// two instances began: its charts draw the sale from before the page was
// opened (the instances' history), and once the load is over the numbers it
// shows for each instance match GET /goods/1. DASHBOARD_SCREENSHOT=file
// saves what it showed (a relative path is the checkout's).
func TestDashboardShowsTheSaleLive(t *testing.T) {
	browser := e2e.Chromium(t)
	s := e2e.NewStack(t, e2e.WithPayTimeout(time.Hour), e2e.WithMaxSleep(20*time.Millisecond))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "40", "--clear-orders")
	// The instances know each other by address (dashboard.peers, the same
	// list on both, as in a deployment): a's page reads b's data only
	// because b lists a.
	addrs := e2e.FreeAddrs(t, 2)
	peers := e2e.WithSetting("dashboard.peers", "http://"+addrs[0]+",http://"+addrs[1])
	a, b := s.ServeOn(t, addrs[0], peers), s.ServeOn(t, addrs[1], peers)
	for _, tc := range []struct{ origin, allowed string }{{a.URL, a.URL}, {"http://evil.example", ""}} {
		a := e2e.Ask(http.MethodGet, b.URL+"/dashboard/data?goods=1", "Origin", tc.origin)
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		if got := a.Header.Get("Access-Control-Allow-Origin"); got != tc.allowed {
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
	if got := e2e.Ask(http.MethodGet, a.URL+"/dashboard/data?goods=999"); got.Status != http.StatusNotFound {
		t.Errorf("GET /dashboard/data?goods=999: %d %v, want 404", got.Status, got.Err)
	}

	// Each instance samples at its start; the load begins once both have a
	// point, so that the history the page draws holds the sale's start.
	for _, in := range []*e2e.Instance{a, b} {
		if !e2e.WaitUntil(30*time.Second, func() bool { return len(dashboardHistory(t, in.URL)) > 0 }) {
			t.Fatalf("%s has no sampled point 30 s after its start", in.URL)
		}
	}
	loadStart := time.Now()
	loadDone := make(chan e2e.Outcome, 1)
	go func() { loadDone <- buyPaced([]string{a.URL, b.URL}, 120, 8) }()
	e2e.WaitUntil(30*time.Second, func() bool { _, orders := s.Counts(t); return orders >= 10 })
	opened := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/dashboard")); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}

	// The charts draw at once, from before the page was opened.
	var points, t0 int64
	if !e2e.WaitUntil(5*time.Second, func() bool {
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
	if got.Status[200] != 40 {
		t.Fatalf("the load: %v, want 40 sales", got.Status)
	}

	// Then the numbers it shows match the database's, for both instances.
	stock, orders := s.Counts(t)
	want := map[string]string{"stock": strconv.Itoa(stock), "orders": strconv.Itoa(orders)}
	var shown map[string]string
	if !e2e.WaitUntil(30*time.Second, func() bool {
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
		if !filepath.IsAbs(f) {
			f = e2e.InRoot(t, f) // docs/dashboard.png is the checkout's
		}
		if err := os.WriteFile(f, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", f)
	}

	// Another goods, chosen in the page's address (?goods=N), not by the
	// server's dashboard.goods.
	s.Shop(t, "stock", "set", "--goods", "2", "--stock", "7")
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/dashboard?goods=2")); err != nil {
		t.Fatalf("open the dashboard of goods 2: %v", err)
	}
	if !e2e.WaitUntil(30*time.Second, func() bool {
		g, err1 := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#goods")))
		v, err2 := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`td[data-peer="0"][data-field="stock"]`)))
		return err1 == nil && err2 == nil && strings.TrimSpace(g) == "2" && strings.TrimSpace(v) == "7"
	}) {
		t.Errorf("/dashboard?goods=2 does not show goods 2 with its stock 7")
	}
}

// buyPaced sends n purchases of goods 1, conc at a time, round-robin over
// bases, and counts the answers.
func buyPaced(bases []string, n, conc int) e2e.Outcome {
	answers, _ := closedLoad(bases, n, conc)
	out := e2e.Outcome{Status: map[int]int{}, Codes: map[string]int{}}
	for _, a := range answers {
		out.Status[a.Status]++
		out.Codes[a.Code]++
	}
	return out
}

// dashboardHistory is the points of goods 1 an instance's dashboard data
// holds (none on any error).
func dashboardHistory(t *testing.T, url string) []json.RawMessage {
	t.Helper()
	a := e2e.Ask(http.MethodGet, url+"/dashboard/data?goods=1&history=1")
	var d struct {
		History []json.RawMessage `json:"history"`
	}
	if a.Status != http.StatusOK || a.Decode(&d) != nil {
		return nil
	}
	return d.History
}
