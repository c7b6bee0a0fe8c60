package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// apiAnswer is the JSON body of the order, goods and leader endpoints.
type apiAnswer struct {
	status         int
	Code           string         `json:"code"`
	OrderID        uint64         `json:"orderId"`
	Status         string         `json:"status"`
	Stock          *int           `json:"stock"`
	Orders         *int           `json:"orders"`
	OrdersByStatus map[string]int `json:"ordersByStatus"`
	Leader         *bool          `json:"leader"`
	LeaderID       string         `json:"leaderId"`
	ParticipantID  string         `json:"participantId"`
}

// call makes one request of the order, goods and leader endpoints.
func call(t *testing.T, method, url string) apiAnswer {
	t.Helper()
	a, body := e2e.AskJSON[apiAnswer](t, method, url)
	body.status = a.Status
	return body
}

// leaderOf asks each instance who leads; it fails unless they agree and
// exactly the one named says it leads.
func leaderOf(t *testing.T, ins ...*e2e.Instance) (leader *e2e.Instance, ok bool) {
	t.Helper()
	ids := map[string]bool{}
	for _, in := range ins {
		a := call(t, http.MethodGet, in.URL+"/leader")
		if a.status != http.StatusOK || a.Leader == nil {
			return nil, false
		}
		ids[a.LeaderID] = true
		if *a.Leader {
			if leader != nil || a.LeaderID != a.ParticipantID {
				return nil, false
			}
			leader = in
		}
	}
	return leader, leader != nil && len(ids) == 1
}

// Two instances with a short pay timeout: buyers buy, some pay, the rest do
// not. The leader is SIGKILLed while the unpaid orders wait; the other
// instance leads within the session timeout and expires them, and each
// expired order's piece returns to the stock exactly once.
func TestOrdersExpireUnderTheElectedSweeper(t *testing.T) {
	const session = 3 * time.Second
	s := e2e.NewStack(t, e2e.WithPayTimeout(4*time.Second), e2e.WithSweepInterval(200*time.Millisecond),
		e2e.WithSetting("zookeeper.sessionTimeout", session.String()), e2e.WithLogLevel("debug"))
	s.Binary = e2e.ShopBinaryNoRace(t) // the survivor's session sees the killed one's expire
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "20", "--clear-orders")
	a := s.Serve(t)
	b := s.Serve(t)
	var leader *e2e.Instance
	if !e2e.WaitUntil(30*time.Second, func() (ok bool) { leader, ok = leaderOf(t, a, b); return ok }) {
		t.Fatalf("no single leader within 30s\nA:\n%s\nB:\n%s", a.Logs(), b.Logs())
	}
	survivor := map[*e2e.Instance]*e2e.Instance{a: b, b: a}[leader]

	// Ten buyers, five through each instance; four of them pay.
	var ids []uint64
	for i := range 10 {
		in := []*e2e.Instance{a, b}[i%2]
		ans := call(t, http.MethodGet, in.URL+"/goods-stock/1")
		if ans.status != http.StatusOK || ans.OrderID == 0 {
			t.Fatalf("purchase %d: %d %s", i, ans.status, ans.Code)
		}
		ids = append(ids, ans.OrderID)
	}
	for i, id := range ids[:4] {
		in := []*e2e.Instance{a, b}[i%2]
		url := fmt.Sprintf("%s/orders/%d/pay", in.URL, id)
		if ans := call(t, http.MethodPost, url); ans.status != http.StatusOK || ans.Status != "paid" {
			t.Fatalf("pay order %d: %d %s %s", id, ans.status, ans.Code, ans.Status)
		}
		if ans := call(t, http.MethodPost, url); ans.status != http.StatusOK || ans.Status != "paid" {
			t.Fatalf("pay order %d again: %d %s, want 200 paid", id, ans.status, ans.Code)
		}
	}
	if ans := call(t, http.MethodGet, fmt.Sprintf("%s/orders/%d", a.URL, ids[5])); ans.status != http.StatusOK || ans.Status != "unpaid" {
		t.Fatalf("an unpaid order reads %d %s", ans.status, ans.Status)
	}

	// The leader dies before the unpaid orders are due.
	leader.Kill(t)
	killed := time.Now()
	if !e2e.WaitUntil(session+15*time.Second, func() bool { l, ok := leaderOf(t, survivor); return ok && l == survivor }) {
		t.Fatalf("the survivor did not lead within %v of the leader's death\n%s", session+15*time.Second, survivor.Logs())
	}
	t.Logf("the survivor leads %v after the leader was killed (session timeout %v)", time.Since(killed).Round(10*time.Millisecond), session)

	var g apiAnswer
	if !e2e.WaitUntil(30*time.Second, func() bool {
		g = call(t, http.MethodGet, survivor.URL+"/goods/1")
		return g.OrdersByStatus["expired"] == 6
	}) {
		t.Fatalf("the unpaid orders did not expire within 30s: %+v\n%s", g.OrdersByStatus, survivor.Logs())
	}
	time.Sleep(time.Second) // sweeps go on: nothing may expire twice
	g = call(t, http.MethodGet, survivor.URL+"/goods/1")
	if *g.Stock != 20-4 || g.OrdersByStatus["paid"] != 4 || g.OrdersByStatus["unpaid"] != 0 || g.OrdersByStatus["expired"] != 6 {
		t.Fatalf("stock %d with orders %v; want stock 16 (20 − 4 paid), 4 paid, 6 expired", *g.Stock, g.OrdersByStatus)
	}
	for _, id := range ids[4:] {
		ans := call(t, http.MethodPost, fmt.Sprintf("%s/orders/%d/pay", survivor.URL, id))
		if ans.status != http.StatusConflict || ans.Code != "order_expired" {
			t.Errorf("paying expired order %d: %d %s, want 409 order_expired", id, ans.status, ans.Code)
		}
	}
	if ans := call(t, http.MethodGet, survivor.URL+"/orders/99999999"); ans.status != http.StatusNotFound || ans.Code != "order_not_found" {
		t.Errorf("an unknown order: %d %s", ans.status, ans.Code)
	}
	if ans := call(t, http.MethodGet, survivor.URL+"/orders/x1"); ans.status != http.StatusBadRequest || ans.Code != "invalid_order_id" {
		t.Errorf("a malformed order id: %d %s", ans.status, ans.Code)
	}
}

var sweepRE = regexp.MustCompile(`msg=sweep sweeper=(\S+) start=(\d+) end=(\d+)`)

type sweep struct {
	by         string
	start, end int64
}

func sweeps(logs string) []sweep {
	var out []sweep
	for _, m := range sweepRE.FindAllStringSubmatch(logs, -1) {
		start, _ := strconv.ParseInt(m[2], 10, 64)
		end, _ := strconv.ParseInt(m[3], 10, 64)
		out = append(out, sweep{m[1], start, end})
	}
	return out
}

// A leader whose ZooKeeper connection stalls (a proxy holds its bytes) is
// suspended: it stops sweeping then, before its session expires and the
// other instance starts. Every sweep is logged with its sweeper, start and
// end; no two sweeps of different sweepers may overlap. A leader that swept
// on while suspended would sweep beside the new one: it cannot learn that its
// session expired while its connection is stalled.
func TestASuspendedLeaderStopsSweepingBeforeAnotherStarts(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithPayTimeout(time.Hour), e2e.WithSweepInterval(50*time.Millisecond),
		e2e.WithSetting("zookeeper.sessionTimeout", faultSession), e2e.WithLogLevel("debug"))
	s.Binary = e2e.ShopBinaryNoRace(t) // A's session expires and it reconnects
	s.Shop(t, "migrate")
	zk := e2e.NewProxy(t, e2e.ZooKeeper(t)[0])
	a := s.Serve(t, e2e.WithSetting("zookeeper.servers", zk.Addr()), e2e.WithSetting("leader.id", "A"))
	if !e2e.WaitUntil(30*time.Second, func() bool { l, ok := leaderOf(t, a); return ok && l == a }) {
		t.Fatalf("A did not lead within 30s\n%s", a.Logs())
	}
	b := s.Serve(t, e2e.WithSetting("leader.id", "B"))
	if !e2e.WaitUntil(30*time.Second, func() bool { return len(sweeps(a.Logs())) >= 3 }) {
		t.Fatalf("A does not sweep\n%s", a.Logs())
	}

	zk.Stall()
	if !e2e.WaitUntil(30*time.Second, func() bool { return len(sweeps(b.Logs())) >= 3 }) {
		zk.Resume()
		t.Fatalf("B did not take over within 30s of A's stall\nA:\n%s\nB:\n%s", a.Logs(), b.Logs())
	}
	zk.Resume()
	// A reconnects, learns its session expired and queues again behind B.
	if !e2e.WaitUntil(30*time.Second, func() bool {
		l, ok := leaderOf(t, a, b)
		return ok && l == b
	}) {
		t.Fatalf("A and B do not agree that B leads\nA:\n%s\nB:\n%s", a.Logs(), b.Logs())
	}

	all := append(sweeps(a.Logs()), sweeps(b.Logs())...)
	slices.SortFunc(all, func(x, y sweep) int { return int(x.start - y.start) })
	for i := 1; i < len(all); i++ {
		prev, cur := all[i-1], all[i]
		if cur.by != prev.by && cur.start < prev.end {
			t.Fatalf("%s swept from %d while %s swept until %d: two sweepers at once", cur.by, cur.start, prev.by, prev.end)
		}
	}
	// A stopped before B began: its last sweep ends before B's first starts.
	lastA, firstB := int64(0), int64(0)
	for _, sw := range all {
		if sw.by == "A" {
			lastA = max(lastA, sw.end)
		} else if firstB == 0 {
			firstB = sw.start
		}
	}
	if lastA >= firstB {
		t.Fatalf("A's last sweep ended at %d, after B's first began at %d", lastA, firstB)
	}
	if !strings.Contains(a.Logs(), "stopped sweeping") {
		t.Errorf("A never logged that it stopped sweeping\n%s", a.Logs())
	}
	t.Logf("A swept until %v before B began", time.Duration(firstB-lastA))
}

// Two deployments on one ZooKeeper, each two instances on a database of
// its own, with the same leader.path: {database} in it (as the default
// has) gives each database an election of its own, so that each pair
// elects a sweeper and each deployment's unpaid orders expire. Without it
// one sweeper leads both pairs, and the other database's orders never
// expire.
func TestTwoDeploymentsOnOneZooKeeperEachSweepTheirOwn(t *testing.T) {
	leaderPath := e2e.Path(t) + "/{database}/leader"
	var deployments [2]struct {
		e2e.Stack
		ins   []*e2e.Instance
		order uint64
	}
	for i := range deployments {
		d := &deployments[i]
		d.Stack = e2e.NewStack(t, e2e.WithSetting("leader.path", leaderPath), e2e.WithPayTimeout(2*time.Second), e2e.WithSweepInterval(200*time.Millisecond))
		d.Shop(t, "migrate")
		d.Shop(t, "stock", "set", "--goods", "1", "--stock", "5", "--clear-orders")
		d.ins = []*e2e.Instance{d.Serve(t), d.Serve(t)}
	}
	for i := range deployments {
		d := &deployments[i]
		if !e2e.WaitUntil(30*time.Second, func() bool { _, ok := leaderOf(t, d.ins...); return ok }) {
			t.Fatalf("deployment %d: no instance leads its election within 30s (another database's sweeper leads it?)\n%s", i, d.ins[0].Logs())
		}
		a := call(t, http.MethodGet, d.ins[0].URL+"/goods-stock/1")
		if a.status != http.StatusOK {
			t.Fatalf("deployment %d: a purchase: %d %s", i, a.status, a.Code)
		}
		d.order = a.OrderID
	}
	for i := range deployments {
		d := &deployments[i]
		if !e2e.WaitUntil(30*time.Second, func() bool {
			return call(t, http.MethodGet, fmt.Sprintf("%s/orders/%d", d.ins[1].URL, d.order)).Status == "expired"
		}) {
			t.Fatalf("deployment %d: its unpaid order %d did not expire within 30s", i, d.order)
		}
	}
}
