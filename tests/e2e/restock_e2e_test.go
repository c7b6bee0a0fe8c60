package e2e

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// TestACrowdAfterARestockBuys: two instances, a crowd of 1 500 (the load
// tester's patient buyers, through the waiting room) sells goods 1 out,
// `stock set --clear-orders` puts 100 back, and a second crowd sent the
// moment the command returns buys all 100. It bought 0, 60 and 100 in three
// runs before: the second crowd queued behind the first crowd's places, long
// gone, and the instances' sold-out marks of the first sale answered it for
// up to a second. Now clearing the orders voids the places, and stock set
// returns once no instance answers from what it saw.
func TestACrowdAfterARestockBuys(t *testing.T) {
	root := e2e.BuiltRoot(t)
	s := e2e.NewStack(t, e2e.WithMaxSleep(0), e2e.WithQueueTarget(300*time.Millisecond), e2e.WithStrategy("seed"))
	s.Binary = e2e.ShopBinaryNoRace(t) // the stock set as quick as an operator's: the race detector's start-up hid the stale second
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders")
	a, b := s.Serve(t), s.Serve(t)
	crowd := func(what string) int {
		t.Helper()
		cmd := exec.Command(root+"/bin/loadtest", "--url", a.URL+","+b.URL, "--requests", "1500", "--concurrency", "1500")
		cmd.Env = s.Env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		m := regexp.MustCompile(`succeeded \(200\) +(\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no succeeded row in the load tester's table:\n%s", what, out)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if n := crowd("the first crowd"); n != 100 {
		t.Fatalf("the first crowd bought %d of 100", n)
	}
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders")
	if n := crowd("the crowd after the restock"); n != 100 {
		t.Errorf("the crowd sent as stock set returned bought %d of 100, want all", n)
	}
}
