package e2e

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// outsider is a ZooKeeper client with an identity of its own, not the
// shop's.
func outsider(t *testing.T, s e2e.Stack) *gozk.Conn {
	t.Helper()
	return zkAs(t, s, "outsider:not-the-shops")
}

// operatorOf is a ZooKeeper client authenticated as the shop's own
// identity (an operator at zkCli with its digest).
func operatorOf(t *testing.T, s e2e.Stack) *gozk.Conn {
	t.Helper()
	return zkAs(t, s, e2e.ZKDigest)
}

// zkAs is a ZooKeeper client of the stack's, authenticated as digest
// (user:password), closed when the test ends.
func zkAs(t *testing.T, s e2e.Stack, digest string) *gozk.Conn {
	t.Helper()
	conn, _, err := gozk.Connect(s.ZKServers, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if err := conn.AddAuth("digest", []byte(digest)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// makeAll makes p and its missing ancestors with acl.
func makeAll(t *testing.T, conn *gozk.Conn, p string, acl []gozk.ACL) {
	t.Helper()
	if p == "/" {
		return
	}
	makeAll(t, conn, path.Dir(p), gozk.WorldACL(gozk.PermAll))
	if _, err := conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
		t.Fatalf("the outsider makes %s: %v", p, err)
	}
}

// serveExit runs shop serve, which must stop on its own within a minute,
// and returns its output and exit status.
func serveExit(t *testing.T, s e2e.Stack) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Binary, "serve", "--server.addr", "127.0.0.1:0")
	cmd.Env = s.Env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil || ctx.Err() != nil {
		t.Fatalf("shop serve: %v (it should have refused to start)\n%s", err, out)
	}
	return string(out), 0
}

// TestTheShopOwnsItsZooKeeperPaths: the shop makes its lock and election
// paths as persistent nodes with its ACL, refuses to start on a path an
// outsider made first, and, when an outsider takes its lock path during a
// sale, says so (/readyz 503, seckill_zookeeper_paths_owned 0, the NoAuth
// counted, the dashboard) until the path is its own again; an election
// that cannot queue does the same. The sale stays exact throughout.
func TestTheShopOwnsItsZooKeeperPaths(t *testing.T) {
	auth := e2e.WithSetting("zookeeper.auth", "digest:"+e2e.ZKDigest)

	t.Run("squatted before the start", func(t *testing.T) {
		for _, tc := range []struct {
			name, setting string
			env           []e2e.Option
			squat         func(s e2e.Stack) string // the path the outsider takes
			acl           []gozk.ACL
			want          string
		}{
			{"the lock path, the outsider's ACL", "lock.path", []e2e.Option{auth}, func(s e2e.Stack) string { return s.LockPath },
				gozk.DigestACL(gozk.PermAll, "outsider", "not-the-shops"), "is not this shop's"},
			{"the lock path, open to anyone", "lock.path", []e2e.Option{auth}, func(s e2e.Stack) string { return s.LockPath },
				gozk.WorldACL(gozk.PermAll), "lets world:anyone do cdwa"},
			{"the lock path without zookeeper.auth", "lock.path", nil, func(s e2e.Stack) string { return s.LockPath },
				append(gozk.DigestACL(gozk.PermAll, "outsider", "not-the-shops"), gozk.WorldACL(gozk.PermRead)...), "lets digest:outsider do cdrwa"},
			{"the election's parent", "leader.path", []e2e.Option{auth}, func(s e2e.Stack) string { return path.Dir(leaderPathOf(s)) },
				gozk.DigestACL(gozk.PermAll, "outsider", "not-the-shops"), "refused to make"},
			// The lock path's parent made first, open to anyone (a namespace
			// squatted before the first start): the shop made its lock path
			// in it and sold, and the squatter then deleted the empty lock
			// path and made it his, for good. The shop no longer starts there.
			{"the lock path's parent, open to anyone", "lock.path", []e2e.Option{auth}, func(s e2e.Stack) string { return path.Dir(s.LockPath) },
				gozk.WorldACL(gozk.PermAll), "lets world:anyone do cda there"},
			{"the election's parent, the outsider's to delete in", "leader.path", []e2e.Option{auth}, func(s e2e.Stack) string { return path.Dir(leaderPathOf(s)) },
				append(gozk.DigestACL(gozk.PermAll, "outsider", "not-the-shops"), gozk.WorldACL(gozk.PermCreate|gozk.PermRead)...), "lets digest:outsider do cda there"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := e2e.NewStack(t, tc.env...)
				s.Shop(t, "migrate")
				p := tc.squat(s)
				squatter := outsider(t, s)
				makeAll(t, squatter, p, tc.acl)
				operator := operatorOf(t, s)
				t.Cleanup(func() { // before the test's own cleanup, which may not read it
					kids, _, _ := squatter.Children(p)
					for _, k := range kids { // what the shop made in it before it refused
						_ = operator.Delete(p+"/"+k, -1)
					}
					_ = squatter.Delete(p, -1)
				})
				out, code := serveExit(t, s)
				if code != 1 || !strings.Contains(out, p) || !strings.Contains(out, tc.setting) || !strings.Contains(out, tc.want) {
					t.Fatalf("shop serve with %s taken: exit %d, want 1 and a line naming %s, %s and %q:\n%s", p, code, p, tc.setting, tc.want, out)
				}
				if strings.Contains(out, strings.SplitN(e2e.ZKDigest, ":", 2)[1]) {
					t.Errorf("the shop's ZooKeeper password is in its output")
				}
			})
		}
	})

	t.Run("taken during a sale", func(t *testing.T) {
		s := e2e.NewStack(t, auth, e2e.WithStrategy("seed"), e2e.WithMaxSleep(0), e2e.WithAcquireTimeout(2*time.Second))
		s.Shop(t, "migrate")
		s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders")
		out := outsider(t, s)
		in := s.Serve(t)
		acl, _, err := out.GetACL(s.LockPath)
		if err != nil || len(acl) != 2 || acl[0].Scheme != "digest" || acl[1] != gozk.WorldACL(gozk.PermRead)[0] {
			t.Fatalf("the lock path's ACL as the shop made it: %+v %v; want its identity's and read-only for anyone", acl, err)
		}
		ok := 0
		for range 10 {
			if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1"); a.Status == 200 {
				ok++
			}
		}
		if _, err := out.Create(s.LockPath+"/_c_outsider-lock-", nil, gozk.FlagEphemeralSequential, gozk.WorldACL(gozk.PermAll)); !errors.Is(err, gozk.ErrNoAuth) {
			t.Fatalf("the outsider queues on the shop's lock: %v, want NoAuth", err)
		}
		// An operator opens the lock path's parent to anyone (as ZooKeeper's
		// / is): the shop's recheck finds it at once, before anyone acts.
		operator := operatorOf(t, s)
		parentACL, _, err := operator.GetACL(path.Dir(s.LockPath))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := operator.SetACL(path.Dir(s.LockPath), gozk.WorldACL(gozk.PermAll), -1); err != nil {
			t.Fatal(err)
		}
		if !e2e.WaitUntil(15*time.Second, func() bool { return e2e.MetricValue(t, in.URL, "seckill_zookeeper_paths_owned") == 0 }) {
			t.Errorf("seckill_zookeeper_paths_owned did not turn 0 within 15 s of the lock path's parent opened to anyone")
		}
		if r := e2e.Ask(http.MethodGet, in.URL+"/readyz"); r.Status != 503 || !strings.Contains(in.Logs(), "its parent "+path.Dir(s.LockPath)+" lets world:anyone") {
			t.Errorf("/readyz with the lock path's parent open: %d %s, want 503 and a log line naming the parent", r.Status, r.Body)
		}
		// Between purchases the lock path is empty: the open parent lets
		// the outsider delete it and make it his.
		if err := out.Delete(s.LockPath, -1); err != nil {
			t.Fatalf("the outsider deletes the empty lock path: %v", err)
		}
		if _, err := out.Create(s.LockPath, nil, 0, gozk.DigestACL(gozk.PermAll, "outsider", "not-the-shops")); err != nil {
			t.Fatal(err)
		}
		if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1"); a.Status != 503 || a.Code != "unavailable" {
			t.Fatalf("a purchase on the outsider's path: %d %s, want 503 unavailable", a.Status, a.Code)
		}
		if r := e2e.Ask(http.MethodGet, in.URL+"/readyz"); r.Status != 503 || !strings.Contains(string(r.Body), "zookeeper paths") {
			t.Errorf("/readyz after ZooKeeper refused a purchase: %d %s, want 503 naming the zookeeper paths", r.Status, r.Body)
		}
		if n := e2e.MetricValue(t, in.URL, "seckill_zookeeper_noauth_total"); n < 1 {
			t.Errorf("seckill_zookeeper_noauth_total %v, want the refusal counted", n)
		}
		if !e2e.WaitUntil(15*time.Second, func() bool { return e2e.MetricValue(t, in.URL, "seckill_zookeeper_paths_owned") == 0 }) {
			t.Errorf("seckill_zookeeper_paths_owned did not turn 0 within 15 s")
		}
		if a, d := e2e.AskJSON[struct{ Problems []string }](t, http.MethodGet, in.URL+"/dashboard/data?goods=1"); a.Status != 200 || len(d.Problems) == 0 ||
			!strings.Contains(d.Problems[0], s.LockPath) {
			t.Errorf("the dashboard's problems: %d %q, want one naming %s", a.Status, d.Problems, s.LockPath)
		}
		// The outsider leaves, the operator closes the parent again: the
		// shop makes its path again and sells.
		if err := out.Delete(s.LockPath, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := operator.SetACL(path.Dir(s.LockPath), parentACL, -1); err != nil {
			t.Fatal(err)
		}
		if !e2e.WaitUntil(30*time.Second, func() bool { return e2e.Ask(http.MethodGet, in.URL+"/readyz").Status == 200 }) {
			t.Fatalf("not ready within 30 s of the outsider leaving\n%s", in.Logs())
		}
		for range 10 {
			if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1"); a.Status == 200 {
				ok++
			} else {
				t.Errorf("a purchase once the path is the shop's again: %d %s", a.Status, a.Code)
			}
		}
		if stock, orders := s.Counts(t); ok != 20 || stock != 80 || orders != 20 {
			t.Errorf("%d sold, stock %d, %d order rows; want 20, 80, 20", ok, stock, orders)
		}
		if e2e.MetricValue(t, in.URL, "seckill_zookeeper_paths_owned") != 1 {
			t.Errorf("seckill_zookeeper_paths_owned is not 1 again")
		}
	})

	t.Run("an election that cannot queue", func(t *testing.T) {
		// Without zookeeper.auth the paths are open to anyone: an outsider
		// makes the election path his and deletes the shop's node in it.
		s := e2e.NewStack(t, e2e.WithPayTimeout(time.Minute))
		s.Shop(t, "migrate")
		in := s.Serve(t)
		out := outsider(t, s)
		p := leaderPathOf(s)
		if !e2e.WaitUntil(30*time.Second, func() bool { return e2e.MetricValue(t, in.URL, "seckill_leader_participants") == 1 }) {
			t.Fatalf("seckill_leader_participants is not 1 within 30 s")
		}
		// Open paths are said: at start, in /readyz's answer, a metric.
		if r := e2e.Ask(http.MethodGet, in.URL+"/readyz"); r.Status != 200 || !strings.Contains(string(r.Body), "open to anyone") {
			t.Errorf("/readyz without zookeeper.auth: %d %s, want 200 saying the paths are open to anyone", r.Status, r.Body)
		}
		if e2e.MetricValue(t, in.URL, "seckill_zookeeper_paths_open") != 1 {
			t.Errorf("seckill_zookeeper_paths_open is not 1 without zookeeper.auth")
		}
		if !strings.Contains(in.Logs(), "open to anyone (no zookeeper.auth)") {
			t.Errorf("the start's log does not say the paths are open:\n%s", in.Logs())
		}
		if _, err := out.SetACL(p, append(gozk.DigestACL(gozk.PermAll, "outsider", "not-the-shops"), gozk.WorldACL(gozk.PermRead)...), -1); err != nil {
			t.Fatal(err)
		}
		kids, _, err := out.Children(p)
		if err != nil || len(kids) != 1 {
			t.Fatalf("the election's nodes: %v %v", kids, err)
		}
		if err := out.Delete(p+"/"+kids[0], -1); err != nil {
			t.Fatal(err)
		}
		if !e2e.WaitUntil(30*time.Second, func() bool { return e2e.MetricValue(t, in.URL, "seckill_leader_queued") == 0 }) {
			t.Fatalf("seckill_leader_queued did not turn 0 within 30 s\n%s", in.Logs())
		}
		if r := e2e.Ask(http.MethodGet, in.URL+"/readyz"); r.Status != 503 {
			t.Errorf("/readyz while the election cannot queue: %d %s, want 503", r.Status, r.Body)
		}
		if !e2e.WaitUntil(15*time.Second, func() bool { return e2e.MetricValue(t, in.URL, "seckill_leader_participants") == 0 }) {
			t.Errorf("seckill_leader_participants did not turn 0: nobody sweeps, and the metric should say so")
		}
		if n := strings.Count(in.Logs(), "could not queue; trying again"); n != 1 {
			t.Errorf("%d log lines say the election could not queue, want 1 (and the metric, /readyz)", n)
		}
		if _, err := out.SetACL(p, gozk.WorldACL(gozk.PermAll), -1); err != nil {
			t.Fatal(err)
		}
		if !e2e.WaitUntil(60*time.Second, func() bool {
			return e2e.MetricValue(t, in.URL, "seckill_leader_queued") == 1 && e2e.Ask(http.MethodGet, in.URL+"/readyz").Status == 200
		}) {
			t.Fatalf("not queued and ready within 60 s of the ACL given back\n%s", in.Logs())
		}
	})
}

// Two deployments whose databases share a name (seckill, on two MariaDB
// servers) under one election path: the paths were stamped with the
// database's name, so the second started, one instance swept both and the
// other's orders never expired. The paths are stamped with the
// deployment's identity now (made once, kept in its database): the second
// refuses to start and names the path and both deployments.
func TestTwoDeploymentsOfOneDatabaseNameDoNotShareAnElection(t *testing.T) {
	m1, m2 := e2e.StartMariaDB(t), e2e.StartMariaDB(t)
	leader := e2e.WithSetting("leader.path", e2e.Path(t)+"/leader")
	a := e2e.NewStackOn(t, m1.DSN, e2e.ZooKeeper(t), leader, e2e.WithPayTimeout(time.Minute))
	b := e2e.NewStackOn(t, m2.DSN, e2e.ZooKeeper(t), leader, e2e.WithPayTimeout(time.Minute))
	a.Shop(t, "migrate")
	b.Shop(t, "migrate")
	a.Serve(t)
	out, code := serveExit(t, b)
	if code != 1 || !strings.Contains(out, "serves another deployment") || !strings.Contains(out, "leader.path") {
		t.Fatalf("a second deployment on the first's election path: exit %d, want 1 and a line saying the path serves another deployment:\n%s", code, out)
	}
}

// One database under two sets of ZooKeeper paths (two namespaces): the
// second set's instances started, and half the purchases of each were
// refused lock_lost (fenced off by the other's tokens). The database
// records the paths it is served under; an instance with others refuses to
// start while instances queue in the recorded election, and takes the
// database over (a move) once none does.
func TestOneDatabaseIsServedUnderOneSetOfPaths(t *testing.T) {
	a := e2e.NewStack(t, e2e.WithPayTimeout(time.Minute))
	a.Shop(t, "migrate")
	b := e2e.NewStackOn(t, a.DSN, a.ZKServers, e2e.WithPayTimeout(time.Minute)) // the same database, paths of its own
	takesOver(t, a, b, takeover{
		refused: []string{"sold and swept under other ZooKeeper paths", leaderPathOf(a)},
		logged:  "the database moves to this instance's ZooKeeper paths",
		back:    []string{leaderPathOf(b)},
	})
}

// takeover is what a second stack on a database hears: refused while the
// first's instance runs (each of refused in its output), then started once
// it stopped (logged), and then the first refused (back).
type takeover struct {
	refused []string
	logged  string
	back    []string
}

// takesOver starts an instance of a, checks that one of b is refused
// while it runs and starts once it stopped, and that a's is refused then.
func takesOver(t *testing.T, a, b e2e.Stack, want takeover) {
	t.Helper()
	first := a.Serve(t)
	if out, code := serveExit(t, b); code != 1 || !containsAll(out, want.refused) {
		t.Fatalf("a second instance while the database's first runs: exit %d, want 1 and a line with %q:\n%s", code, want.refused, out)
	}
	if err := first.Stop(t); err != nil {
		t.Fatal(err)
	}
	second := b.Serve(t)
	if !strings.Contains(second.Logs(), want.logged) {
		t.Errorf("the takeover was not logged (%q):\n%s", want.logged, second.Logs())
	}
	if out, code := serveExit(t, a); code != 1 || !containsAll(out, want.back) {
		t.Errorf("the first stack's instance, once the second took over: exit %d, want 1 and a line with %q:\n%s", code, want.back, out)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// leaderPathOf is the stack's leader.path.
func leaderPathOf(s e2e.Stack) string {
	for _, kv := range s.Env {
		if v, ok := strings.CutPrefix(kv, "SHOP_LEADER_PATH="); ok {
			return v
		}
	}
	return ""
}

// Two instances of one database with two pay timeouts: one expired an
// order that the other then took payment for. The database records the
// settings its instances must agree on (orders.payTimeout, lock.order)
// with its paths; an instance with others refuses to start while
// instances queue in the election, naming the setting and both values,
// and records its own once none does.
func TestTheInstancesOfOneDatabaseAgreeOnThePayTimeout(t *testing.T) {
	a := e2e.NewStack(t, e2e.WithPayTimeout(time.Minute))
	a.Shop(t, "migrate")
	takesOver(t, a, a.With(t, e2e.WithPayTimeout(2*time.Minute)), takeover{
		refused: []string{"orders.payTimeout is 1m0s, this instance's 2m0s"},
		logged:  "the database's instances change settings",
		back:    []string{"orders.payTimeout is 2m0s, this instance's 1m0s"},
	})
}
