package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/auth"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

func TestExactProblems(t *testing.T) {
	exact := loadgen.Result{Requests: 1500, StockBefore: 100, StockAfter: 0, Succeeded: 100, OrdersCreated: 100}
	tests := []struct {
		name   string
		mutate func(*loadgen.Result)
		want   string // substring of the problems; "" for none
	}{
		{"exact", func(*loadgen.Result) {}, ""},
		{"oversold", func(r *loadgen.Result) { r.Succeeded, r.OrdersCreated, r.Oversold = 150, 150, 50 }, "oversold 50"},
		{"order rows missing", func(r *loadgen.Result) { r.OrdersCreated = 99 }, "99 order rows for 100 successes"},
		{"undersold", func(r *loadgen.Result) { r.Succeeded, r.OrdersCreated, r.StockAfter = 90, 90, 10 }, "10 left of a stock of 100"},
		// Orders that expire during the run return their pieces: sold again,
		// the run is exact with more successes than the stock; left, not.
		{"expired pieces resold", func(r *loadgen.Result) { r.Succeeded, r.OrdersCreated, r.Expired = 130, 130, 30 }, ""},
		{"expired pieces left", func(r *loadgen.Result) { r.Requests, r.StockAfter, r.Expired = 100, 30, 30 }, "30 left of a stock of 100"},
		{"fewer buyers than stock", func(r *loadgen.Result) { r.Requests, r.Succeeded, r.OrdersCreated, r.StockAfter = 40, 40, 40, 60 }, ""},
		{"transport errors", func(r *loadgen.Result) { r.TransportErrors = 2 }, "2 transport errors"},
		// An open loop's buyers who told the shop their deadline and left:
		// nothing sold to them after, the order rows would show a sale before.
		{"buyers gone, the shop told", func(r *loadgen.Result) {
			r.TransportErrors, r.Open = 17, &loadgen.OpenSummary{ClientTimeouts: 17, SendTimeout: true}
		}, ""},
		{"buyers gone, the shop not told", func(r *loadgen.Result) {
			r.TransportErrors, r.Open = 17, &loadgen.OpenSummary{ClientTimeouts: 17}
		}, "17 transport errors"},
		{"buyers gone and an error", func(r *loadgen.Result) {
			r.TransportErrors, r.Open = 18, &loadgen.OpenSummary{ClientTimeouts: 17, SendTimeout: true}
		}, "1 transport errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := exact
			tt.mutate(&r)
			got := strings.Join(r.Problems(), "; ")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("problems %q, want %q", got, tt.want)
			}
		})
	}
}

// fakeShop is a shop in memory, with the seed's read-sleep-write, locked or not.
type fakeShop struct {
	mu, lock sync.Mutex
	stock    int
	orders   int
	locked   bool
	bought   map[string]bool // buyers who bought (one per buyer)
	tries    map[string]int  // purchases per X-User-ID
	// verify, when set, makes the shop one of auth.mode jwt: the buyer is
	// the bearer token's, and a request without a valid one is 401.
	verify func(token string) (string, error)
}

func (f *fakeShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/goods/1":
		f.mu.Lock()
		fmt.Fprintf(w, `{"code":"ok","stock":%d,"orders":%d}`, f.stock, f.orders)
		f.mu.Unlock()
	case r.URL.Path == "/goods-stock/1":
		if f.locked {
			f.lock.Lock()
			defer f.lock.Unlock()
		}
		user := r.Header.Get("X-User-ID")
		if f.verify != nil {
			var err error
			if user, err = f.verify(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")); err != nil || r.Header.Get("X-User-ID") != "" {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"code":"unauthenticated"}`)
				return
			}
		}
		f.mu.Lock()
		read := f.stock
		if user != "" {
			if f.tries == nil {
				f.tries, f.bought = map[string]int{}, map[string]bool{}
			}
			f.tries[user]++
			if f.bought[user] {
				f.mu.Unlock()
				w.WriteHeader(http.StatusConflict)
				fmt.Fprint(w, `{"code":"already_bought"}`)
				return
			}
			if read > 0 {
				f.bought[user] = true
			}
		}
		f.mu.Unlock()
		time.Sleep(time.Millisecond)
		if read < 1 {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"code":"sold_out"}`)
			return
		}
		f.mu.Lock()
		f.stock = read - 1
		f.orders++
		f.mu.Unlock()
		fmt.Fprint(w, `{"code":"ok"}`)
	default:
		http.NotFound(w, r)
	}
}

func TestRunMeasuresOversellingAgainstAFakeShop(t *testing.T) {
	for _, locked := range []bool{false, true} {
		t.Run(fmt.Sprintf("locked=%t", locked), func(t *testing.T) {
			shop := &fakeShop{stock: 20, locked: locked}
			a, b := httptest.NewServer(shop), httptest.NewServer(shop) // two "instances"
			defer a.Close()
			defer b.Close()
			r, err := loadgen.Run(context.Background(), loadgen.RunOptions{
				Label: "fake", Targets: []string{a.URL, b.URL}, Goods: []int32{1}, Requests: 200, Concurrency: 50,
				Timeout: 10 * time.Second, MaxDuration: time.Minute, Sample: 5 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Sent != 200 || r.Succeeded+r.SoldOut != 200 || r.TransportErrors != 0 {
				t.Fatalf("sent %d, ok %d, sold out %d, errors %d", r.Sent, r.Succeeded, r.SoldOut, r.TransportErrors)
			}
			if r.OrdersCreated != r.Succeeded || r.StockBefore != 20 || r.StockAfter != shop.stock {
				t.Fatalf("orders %d for %d successes; stock %d -> %d (shop has %d)", r.OrdersCreated, r.Succeeded, r.StockBefore, r.StockAfter, shop.stock)
			}
			if r.Oversold != r.Succeeded-(20-shop.stock) {
				t.Fatalf("oversold %d", r.Oversold)
			}
			if locked && len(r.Problems()) != 0 {
				t.Fatalf("locked fake shop not exact: %v", r.Problems())
			}
			if !locked && r.Oversold <= 0 {
				t.Fatalf("the unlocked fake shop did not oversell: %+v", r)
			}
			if len(r.Samples) < 2 || r.Samples[len(r.Samples)-1].Succeeded != r.Succeeded {
				t.Fatalf("samples %+v", r.Samples)
			}
			if r.Latency.Max <= 0 || r.Throughput <= 0 {
				t.Fatalf("latency %+v, throughput %v", r.Latency, r.Throughput)
			}
		})
	}
}

func TestCompareReportAndExpectations(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r loadgen.Result) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(r) // plain struct: cannot fail
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	samples := []loadgen.Sample{{T: 0, Stock: 100}, {T: 1, Stock: 95, Orders: 1500, Succeeded: 1500}}
	off := write("off.json", loadgen.Result{Label: "lock off", Targets: []string{"http://127.0.0.1:1"}, Goods: []int32{1}, Requests: 1500,
		Sent: 1500, Succeeded: 1500, StockBefore: 100, StockAfter: 95, OrdersCreated: 1500, Oversold: 1495, Samples: samples,
		ByStatus: map[string]int{"200": 1500}})
	on := write("on.json", loadgen.Result{Label: "lock on", Targets: []string{"http://127.0.0.1:1"}, Goods: []int32{1}, Requests: 1500,
		Sent: 1500, Succeeded: 100, SoldOut: 1400, StockBefore: 100, StockAfter: 0, OrdersCreated: 100, Samples: samples,
		ByStatus: map[string]int{"200": 100, "409": 1400, "503": 0}, Fair: &loadgen.FairSummary{Sold: 100, ToFirst: 40, Share: 0.4}})
	html, svg := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.svg")
	var out bytes.Buffer
	err := run(context.Background(), []string{"compare", "--html", html, "--svg", svg, "--expect", "oversell,exact", off, on}, &out, &out)
	if err != nil {
		t.Fatalf("compare: %v\n%s", err, out.String())
	}
	// The bad figures are marked (the oversold, a fair share of 40% with a
	// crowd), the good ones not, and the legend says how to read them.
	for _, want := range []string{"lock off: OVERSOLD 1495", "lock on: exact", "OVERSOLD", "1495 ✗", "40 of 100 (40%) ✗", "reading it", "first come, first served"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "✗"); n != 3 { // the two above and the legend's
		t.Errorf("%d marks in the compare output, want the oversold's and the fair line's (and the legend's):\n%s", n, out.String())
	}
	for _, f := range []string{html, svg} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), "<polyline") != 6 {
			t.Errorf("%s: want 3 lines for each of 2 charts", f)
		}
	}
	err = run(context.Background(), []string{"compare", "--expect", "exact,exact", off, on}, &out, &out)
	var fail *failure
	if !errors.As(err, &fail) || fail.code != 3 {
		t.Fatalf("a failed expectation = %v, want exit code 3", err)
	}
}

// Buyer mode: request i is buyer i mod N; repeats of a buyer who bought are
// counted as already bought and shown in the table.
func TestRunWithBuyers(t *testing.T) {
	shop := &fakeShop{stock: 100, locked: true}
	srv := httptest.NewServer(shop)
	defer srv.Close()
	r, err := loadgen.Run(context.Background(), loadgen.RunOptions{
		Label: "buyers", Targets: []string{srv.URL}, Goods: []int32{1}, Requests: 70, Concurrency: 1, Buyers: 30,
		Timeout: 10 * time.Second, MaxDuration: time.Minute, Sample: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(shop.tries) != 30 || shop.tries["buyer-0"] != 3 || shop.tries["buyer-29"] != 2 {
		t.Fatalf("tries per buyer %v, want 30 buyers, buyer-0 three times, buyer-29 twice", shop.tries)
	}
	if r.Succeeded != 30 || r.ByCode["already_bought"] != 40 {
		t.Fatalf("%d bought, %d already bought; want 30 and 40", r.Succeeded, r.ByCode["already_bought"])
	}
	if p := r.Problems(); len(p) != 0 {
		t.Fatalf("not exact: %v", p)
	}
	table := fmt.Sprint(rows(r))
	if !strings.Contains(table, "already bought (409) 40") || !strings.Contains(table, "buyers (distinct ids) 30") || strings.Contains(table, "409 other") {
		t.Fatalf("table %s", table)
	}
}

// With a token per buyer (--jwt-secret-file) every request is its buyer's,
// named by the token alone, which the shop's own verifier accepts.
func TestRunWithTokens(t *testing.T) {
	secret := []byte("a-test-secret-of-at-least-32-bytes!")
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret, Issuer: "login", Audience: "seckill"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		buyers, distinct, succeeded int
	}{
		{30, 30, 30}, // 70 requests of 30 buyers: 40 repeats
		{0, 70, 70},  // each request its own buyer
	} {
		shop := &fakeShop{stock: 100, locked: true, verify: v.Buyer}
		srv := httptest.NewServer(shop)
		now := time.Now()
		r, err := loadgen.Run(context.Background(), loadgen.RunOptions{
			Label: "tokens", Targets: []string{srv.URL}, Goods: []int32{1}, Requests: 70, Concurrency: 4, Buyers: tc.buyers,
			Timeout: 10 * time.Second, MaxDuration: time.Minute, Sample: 5 * time.Millisecond,
			Token: func(buyer string) (string, error) {
				return auth.MintHS256(secret, buyer, "login", "seckill", now, time.Hour)
			},
		})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(shop.tries) != tc.distinct || r.Succeeded != tc.succeeded || r.ByCode["unauthenticated"] != 0 {
			t.Fatalf("--buyers %d: %d buyers seen, %d bought, %v; want %d buyers, %d bought, no 401", tc.buyers, len(shop.tries), r.Succeeded, r.ByCode, tc.distinct, tc.succeeded)
		}
	}
}

// A run that starts with orders present counts only the rows it created.
func TestRunStartingWithOrdersPresent(t *testing.T) {
	shop := &fakeShop{stock: 10, orders: 7, locked: true}
	srv := httptest.NewServer(shop)
	defer srv.Close()
	r, err := loadgen.Run(context.Background(), loadgen.RunOptions{
		Label: "again", Targets: []string{srv.URL}, Goods: []int32{1}, Requests: 15, Concurrency: 3,
		Timeout: 10 * time.Second, MaxDuration: time.Minute, Sample: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.OrdersBefore != 7 || r.OrdersAfter != 17 || r.OrdersCreated != 10 || r.Oversold != 0 {
		t.Fatalf("orders %d -> %d, created %d, oversold %d; want 7 -> 17, 10, 0", r.OrdersBefore, r.OrdersAfter, r.OrdersCreated, r.Oversold)
	}
	if p := r.Problems(); len(p) != 0 {
		t.Fatalf("not exact: %v", p)
	}
}

// A ramp longer than the sale: once the goods answers sold out, the
// purchases still due are sent at once and the run ends with the last
// answer; the throughput counts from the first request to the last answer,
// not over the ramp.
func TestARampLongerThanTheSaleDoesNotStretchTheRun(t *testing.T) {
	shop := &fakeShop{stock: 5, locked: true}
	srv := httptest.NewServer(shop)
	defer srv.Close()
	r, err := loadgen.Run(context.Background(), loadgen.RunOptions{
		Label: "ramp", Targets: []string{srv.URL}, Goods: []int32{1}, Requests: 40, Concurrency: 10, Ramp: 4 * time.Second,
		Timeout: 10 * time.Second, MaxDuration: time.Minute, Sample: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The sixth purchase, due at 0.6 s, hears sold out: the 34 still due
	// over the next 3.4 s are sent at once.
	if r.Sent != 40 || r.Seconds < 0.5 || r.Seconds >= 2 {
		t.Fatalf("sent %d over %.1f s, want 40, the ramp's rest sent once the sale was over (0.6 s in)", r.Sent, r.Seconds)
	}
	if want := float64(r.Sent) / r.Seconds; r.Throughput < want*0.99 || r.Throughput > want*1.01 {
		t.Errorf("throughput %.0f/s, want the %d answers over %.3f s: %.0f/s", r.Throughput, r.Sent, r.Seconds, want)
	}
}

// The runs' charts scale to the page (a viewBox, no fixed width) and share
// their scales: the panel of a small run is drawn on the axes of the big one.
func TestChartsScaleToThePageOnCommonAxes(t *testing.T) {
	small := &loadgen.Result{Label: "small", StockBefore: 10, Samples: []loadgen.Sample{{T: 0, Stock: 10}, {T: 2, Stock: 0, Orders: 10, Succeeded: 10}}}
	big := &loadgen.Result{Label: "big", StockBefore: 100, Samples: []loadgen.Sample{{T: 0, Stock: 100}, {T: 30, Stock: 0, Orders: 180, Succeeded: 180}}}
	var b strings.Builder
	if err := writeSVG(&b, small, big, small); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if !strings.Contains(svg, `width="100%" viewBox="0 0 1560 300"`) || strings.Contains(svg, `width="1560"`) {
		t.Errorf("the SVG has a fixed size: %.200s", svg)
	}
	// Every panel's top y label is the common 200, its last x label 30.0s.
	if n := strings.Count(svg, `text-anchor="end">200</text>`); n != 3 {
		t.Errorf("%d panels labelled up to 200, want all 3", n)
	}
	if n := strings.Count(svg, `>30.0s</text>`); n != 3 {
		t.Errorf("%d panels with a time axis to 30 s, want all 3", n)
	}
}

// --help exits 0: the load tester's names compare and its flags,
// compare's lists its own (--html, --svg, --expect).
func TestHelpListsEachCommandsFlags(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		want   []string
		absent []string
	}{
		{[]string{"--help"}, []string{"compare", "--requests int", "--ramp duration", "--expect-exact", "Examples:"}, nil},
		{[]string{"compare", "--help"}, []string{"--html string", "--svg string", "--expect string", "RUN.json"}, []string{"--requests"}},
	} {
		var out strings.Builder
		if err := run(context.Background(), tt.args, &out, &out); err != nil {
			t.Errorf("loadtest %s: %v, want exit 0", strings.Join(tt.args, " "), err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("loadtest %s lacks %q:\n%s", strings.Join(tt.args, " "), w, out.String())
			}
		}
		for _, a := range tt.absent {
			if strings.Contains(out.String(), a) {
				t.Errorf("loadtest %s lists %q, another command's", strings.Join(tt.args, " "), a)
			}
		}
	}
}

// An open loop against a shop that keeps selling to buyers who stopped
// waiting: every tenth purchase takes 300 ms and is sold all the same,
// while its buyer gives up after 100 ms. The run counts those buyers as
// client timeouts and their orders as sold to buyers who had gone, and
// the sale is not exact.
func TestAnOpenLoopCountsSalesToBuyersWhoHadGone(t *testing.T) {
	var mu sync.Mutex
	stock, orders, n := 1000, 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/goods/1":
			fmt.Fprintf(w, `{"code":"ok","stock":%d,"orders":%d}`, stock, orders)
		case "/goods-stock/1":
			if r.Header.Get("X-Request-Timeout-Ms") == "" {
				t.Error("an open loop's purchase without X-Request-Timeout-Ms")
			}
			n++
			if n%10 == 0 {
				mu.Unlock()
				time.Sleep(300 * time.Millisecond)
				mu.Lock()
			}
			stock--
			orders++
			fmt.Fprint(w, `{"code":"ok"}`)
		}
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"--url", srv.URL, "--rate", "200", "--duration", "1s", "--timeout", "100ms",
		"--quiet", "--expect-exact"}, &out, &errOut)
	var f *failure
	if !errors.As(err, &f) || f.code != 3 || !strings.Contains(f.msg, "20 order rows") && !strings.Contains(f.msg, "order rows for") {
		t.Fatalf("a sale with orders sold to buyers who had gone: %v (want exit 3, not exact)\n%s", err, out.String())
	}
	for _, want := range []string{"offered -> sent (req/s)", "200 -> 200", "client timeouts / never sent", "sold to buyers who had gone"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	// The 20 slow purchases time out; on a busy machine a few fast ones too
	// (their 100 ms can pass before the answer is read).
	if m := regexp.MustCompile(`client timeouts / never sent\s+(\d+) / 0\n`).FindStringSubmatch(out.String()); m == nil {
		t.Errorf("no client timeouts line with none never sent:\n%s", out.String())
	} else if n, _ := strconv.Atoi(m[1]); n < 20 {
		t.Errorf("%d client timeouts, want the 20 slow purchases at least:\n%s", n, out.String())
	}
	var r loadgen.Result
	if err := run(context.Background(), []string{"--url", srv.URL, "--rate", "100", "--duration", "1s", "--timeout", "100ms", "--quiet", "--json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out.Bytes()[strings.LastIndex(out.String(), "\n{")+1:], &r); err != nil {
		t.Fatal(err)
	}
	if r.Open == nil || r.SoldToGone != 10 || r.Open.ClientTimeouts != 10 || r.Succeeded != 90 {
		t.Errorf("100 purchases, every tenth sold after its buyer left: sold to gone %d, timeouts %+v, ok %d; want 10, 10, 90", r.SoldToGone, r.Open, r.Succeeded)
	}
}

func TestOpenLoopFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--rate", "100", "--requests", "10"},
		{"--rate", "100", "--concurrency", "10"},
		{"--duration", "5s"},
		{"--rate", "-1"},
		{"--rate", "100", "--ramp-up", "20s", "--duration", "10s"},
		{"--rate", "100", "--connections", "0"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"--url", "http://127.0.0.1:1"}, args...), &out, &errOut)
		var f *failure
		if !errors.As(err, &f) || f.code != 2 {
			t.Errorf("loadtest %v: %v, want a usage error", args, err)
		}
	}
}

// A run's default label says what was sent: repeat buyers as buyers, and
// a ramp as a ramp, not "at once".
func TestTheDefaultLabelSaysWhatWasSent(t *testing.T) {
	for _, tc := range []struct {
		o    loadgen.RunOptions
		want string
	}{
		{loadgen.RunOptions{Requests: 1500, Concurrency: 1500}, "1500 buyers, 1500 at once"},
		{loadgen.RunOptions{Requests: 600, Concurrency: 100, Buyers: 500}, "600 requests by 500 buyers, 100 at once"},
		{loadgen.RunOptions{Requests: 100, Concurrency: 100, Ramp: 5 * time.Second}, "100 buyers, 100 at a time, started over 5s"},
	} {
		if got := closedLabel(tc.o); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.o, got, tc.want)
		}
	}
}

// A run against a shop that asks for tokens, without one or with tokens it
// refuses, says so and fails: every answer 401 measured nothing (exit 3,
// naming --jwt-secret-file); some 401s are told on stderr, and in the
// --expect-exact verdict. A secret the shop would refuse (under 32 bytes)
// is refused before anything is sent.
func TestA401RunSaysWhatTheShopAsksFor(t *testing.T) {
	secret := []byte("a-test-secret-of-at-least-32-bytes!")
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&fakeShop{stock: 100, locked: true, verify: v.Buyer})
	defer srv.Close()
	dir := t.TempDir()
	wrong, short := filepath.Join(dir, "wrong.secret"), filepath.Join(dir, "short.secret")
	if err := os.WriteFile(wrong, []byte(strings.Repeat("w", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte(strings.Repeat("s", 24)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no token", nil, 3, "20 of 20 purchases answered 401 unauthenticated: the shop asks for a bearer token (auth.mode=jwt): give --jwt-secret-file"},
		{"no token, --expect-exact", []string{"--expect-exact"}, 3, "give --jwt-secret-file"},
		{"another secret", []string{"--jwt-secret-file", wrong}, 3, "the shop refused the tokens: check that --jwt-secret-file"},
		{"a secret the shop would refuse", []string{"--jwt-secret-file", short}, 2, "the secret has 24 bytes; the shop refuses an auth.hmacSecretFile of fewer than 32"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"--url", srv.URL, "--requests", "20", "--concurrency", "4", "--quiet"}, tc.args...), &out, &errOut)
		var f *failure
		if !errors.As(err, &f) || f.code != tc.code || !strings.Contains(f.msg, tc.want) {
			t.Errorf("%s: %v (stderr %q), want exit %d saying %q", tc.name, err, errOut.String(), tc.code, tc.want)
		}
	}
}

// A ramp spreads the buyers however fast the answers come: 20 purchases
// by 20 buyers over a 1 s ramp arrive over that second, not in the first
// few milliseconds.
func TestARampSpreadsTheBuyers(t *testing.T) {
	shop := &fakeShop{stock: 100, locked: true}
	srv := httptest.NewServer(shop)
	defer srv.Close()
	r, err := loadgen.Run(context.Background(), loadgen.RunOptions{
		Label: "ramp", Targets: []string{srv.URL}, Goods: []int32{1}, Requests: 20, Concurrency: 20, Ramp: time.Second,
		Timeout: 10 * time.Second, MaxDuration: time.Minute, Sample: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 20 || r.Seconds < 0.9 {
		t.Fatalf("sent %d over %.3f s, want 20 spread over the 1 s ramp (the last due at 0.95 s)", r.Sent, r.Seconds)
	}
}

// The load engine speaks plain HTTP/1.1 to base URLs: anything else is a
// usage error, not a run whose every request fails.
func TestTargetsAreBaseURLs(t *testing.T) {
	for _, url := range []string{"https://127.0.0.1:1", "127.0.0.1:1", "http://127.0.0.1:1/goods-stock/1", "http://127.0.0.1:1,ftp://x"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"--url", url, "--requests", "1"}, &out, &errOut)
		var f *failure
		if !errors.As(err, &f) || f.code != 2 {
			t.Errorf("--url %s: %v, want a usage error", url, err)
		}
	}
}
