package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// (f) of `make bench-shop`: what auth.mode jwt and the limits cost a batch
// sale of goods 1, every buyer with an id of its own (so that the
// one-per-buyer rule runs in every mode alike): named by X-User-ID with
// auth.mode none, by an HS256 bearer token with jwt (the tokens made before
// the run), and with jwt and both limits on, set high enough to refuse
// nobody (every purchase still passes through both limiters).

// authMode is one way (f) runs the shop.
type authMode struct {
	name string
	env  []e2e.Option
	jwt  bool // a bearer token per buyer, else X-User-ID
}

func authModes(secretFile string) []authMode {
	jwt := []e2e.Option{e2e.WithSetting("auth.mode", "jwt"), e2e.WithSetting("auth.hmacSecretFile", secretFile)}
	return []authMode{
		{name: "none, X-User-ID", env: nil},
		{name: "jwt", env: append(append([]e2e.Option{}, jwt...), e2e.WithSetting("limits.buyerRate", 0), e2e.WithSetting("limits.clientRate", 0)), jwt: true},
		{name: "jwt and the limits", env: append(append([]e2e.Option{}, jwt...), e2e.WithSetting("limits.buyerRate", 100), e2e.WithSetting("limits.buyerBurst", 5),
			e2e.WithSetting("limits.clientRate", 1000000), e2e.WithSetting("limits.clientBurst", 1000000)), jwt: true},
	}
}

// benchAuth runs (f): each mode rounds times, in a different order each
// round, buyers buyers conc at a time on two batch instances.
func benchAuth(b *testing.B, buyers, conc, rounds int) map[string][]benchRun {
	secret := []byte(strings.Repeat("bench-secret-", 4))
	secretFile := filepath.Join(b.TempDir(), "hs256.secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	headers := map[bool][][]string{false: make([][]string, buyers), true: make([][]string, buyers)}
	for i := range buyers {
		buyer := fmt.Sprint("buyer-", i)
		tok, err := auth.MintHS256(secret, buyer, "", "", now, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		headers[false][i] = []string{"X-User-ID", buyer}
		headers[true][i] = []string{"Authorization", "Bearer " + tok}
	}
	modes := authModes(secretFile)
	var names []string
	for _, m := range modes {
		names = append(names, m.name)
	}
	runs := map[string][]benchRun{}
	inRounds(rounds, names, "(f) who may do what", func(name string) {
		m := modes[slices.IndexFunc(modes, func(m authMode) bool { return m.name == name })]
		runs[name] = append(runs[name], benchAuthSale(b, m, headers[m.jwt], conc))
	})
	return runs
}

// benchAuthSale sells goods 1 (stock enough for every buyer) to one
// request per header, on two batch instances in mode m, and checks it.
func benchAuthSale(b *testing.B, m authMode, headers [][]string, conc int) benchRun {
	b.Helper()
	s := e2e.NewStackOn(b, e2e.Database(b), e2e.ZooKeeper(b), append([]e2e.Option{e2e.WithStrategy("batch"), e2e.WithLogLevel("info"),
		e2e.WithMaxSleep(0), e2e.WithAcquireTimeout(2 * time.Minute)}, m.env...)...)
	s.Binary = e2e.ShopBinaryNoRace(b)
	s.Shop(b, "migrate")
	stock := len(headers) + 1000
	s.Shop(b, "stock", "set", "--goods", "1", "--stock", fmt.Sprint(stock), "--clear-orders")
	in1, in2 := s.Serve(b), s.Serve(b)
	answers, start := closedLoadWith([]string{in1.URL, in2.URL}, len(headers), conc, func(i int) (string, []string) {
		return "/goods-stock/1", headers[i]
	})
	run := tally(answers, start, nil)
	left, orders := s.GoodsCounts(b)
	run.oversold = orders[1] - (stock - left[1])
	run.phantoms = max(run.ok-orders[1], 0)
	for _, in := range []*e2e.Instance{in1, in2} {
		if err := in.Stop(b); err != nil {
			b.Fatalf("%s instance did not stop cleanly: %v\n%s", m.name, err, in.Logs())
		}
	}
	return run
}

// benchAuthTable is (f) with its target.
func benchAuthTable(buyers, conc, rounds int, runs map[string][]benchRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(f) who may do what: batch, two instances, goods 1, %d buyers (each its own id), %d at a time, median of %d rounds\n", buyers, conc, rounds)
	fmt.Fprintf(&b, "%-20s %12s %10s %12s %9s %9s %9s %s\n", "mode", "purchases/s", "x none", "rounds", "p99 ms", "oversold", "phantoms", "other answers")
	base := runs[authModes("")[0].name]
	var worst float64 = -1
	bad := 0
	for _, m := range authModes("") {
		rs := runs[m.name]
		var ratios []float64
		oversold, phantoms := 0, 0
		for i, r := range rs {
			ratios = append(ratios, r.purchasesPerSec/base[i].purchasesPerSec)
			oversold, phantoms = oversold+r.oversold, phantoms+r.phantoms
			bad += r.oversold + r.phantoms + len(r.other)
			if r.ok != r.buyers {
				bad++
			}
		}
		x := medianOf(ratios)
		if m.name == "jwt and the limits" {
			worst = x
		}
		fmt.Fprintf(&b, "%-20s %12.0f %10.2f %12s %9.1f %9d %9d %v\n", m.name, median(rs, func(r benchRun) float64 { return r.purchasesPerSec }),
			x, spread(ratios), median(rs, func(r benchRun) float64 { return float64(r.p99.Microseconds()) / 1000 }), oversold, phantoms, rs[len(rs)-1].other)
	}
	fmt.Fprintf(&b, "target: jwt and the limits cost < 10%% of batch's purchases/s (>= 0.90x none): %.2fx, %s\n", worst, verdict(worst >= 0.9))
	fmt.Fprintf(&b, "target: every buyer bought, 0 oversold, every 200 with its order row, no other answer: %s\n", verdict(bad == 0))
	return b.String()
}
