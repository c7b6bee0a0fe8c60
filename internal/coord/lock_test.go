package coord

import (
	"context"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The purchase's lease says when its lock is lost: the purchase checks it
// before it commits. Here the lock node is deleted under it (as an admin
// or a session's end would): Lost must close. Fails when the lease's Lost
// is a channel that never closes.
func TestALeaseIsLostWhenItsNodeGoes(t *testing.T) {
	for _, byArrival := range []bool{false, true} {
		t.Run(map[bool]string{false: "sequence", true: "arrival"}[byArrival], func(t *testing.T) {
			leaseLostWithItsNode(t, byArrival)
		})
	}
}

func leaseLostWithItsNode(t *testing.T, byArrival bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *zklock.Client {
		conn, err := zk.Connect(ctx, e2e.ZooKeeper(t), zk.Options{SessionTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		return zklock.New(conn, zklock.Options{})
	}
	c, observer := connect(), connect()
	locker := NewLocker(c, NewPaths(e2e.Path(t)+"/goods/"+GoodsNoPlaceholder, 1))
	locker.ByArrival = byArrival
	lease, err := locker.Lock(ctx, 7, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := lease.Token(ctx); err != nil || tok <= 0 {
		t.Fatalf("token %d, %v: want a positive token", tok, err)
	}
	select {
	case <-lease.Lost():
		t.Fatal("the lease is lost while its node is there")
	case <-time.After(200 * time.Millisecond):
	}
	dir := locker.Path(7)
	kids, _, err := observer.Conn().Children(dir)
	kids = slices.DeleteFunc(kids, func(k string) bool { return k == "turnstile" }) // ArrivalMutex's
	if err != nil || len(kids) != 1 {
		t.Fatalf("children of %s: %v, %v: want the lease's node", dir, kids, err)
	}
	if err := observer.Conn().Delete(path.Join(dir, kids[0]), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost within 10s of its node's deletion")
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLockPathTemplate(t *testing.T) {
	for _, c := range []struct {
		template string
		stripes  int
		goods    int32
		want     string
		key      string // another goods of the same lock, or ""
	}{
		{"/locks/goods/{goodsNo}", 16, 42, "/locks/goods/42", ""},
		{"/Locks", 16, 42, "/Locks", "/Locks"},
		{"/locks/stripe/{stripe}", 16, 42, "/locks/stripe/10", "/locks/stripe/10"},
		{"/locks/stripe/{stripe}", 1, 42, "/locks/stripe/0", "/locks/stripe/0"},
	} {
		p := NewPaths(c.template, c.stripes)
		if got := p.Path(c.goods); got != c.want {
			t.Errorf("%s with %d stripes: Path(%d) = %q, want %q", c.template, c.stripes, c.goods, got, c.want)
		}
		l := NewLocker(nil, p)
		same := l.LockKey(c.goods+int32(c.stripes)) == l.LockKey(c.goods)
		if same != (c.key != "") {
			t.Errorf("%s with %d stripes: goods %d and %d share a lock: %t", c.template, c.stripes, c.goods, c.goods+int32(c.stripes), same)
		}
	}
	p := NewPaths("/locks/stripe/{stripe}", 4)
	for dir, want := range map[string]string{"/locks/stripe/3": "/locks/stripe/3", "/locks/stripe/4": "", "/locks/stripe/03": "", "/locks/other": ""} {
		if got := p.MetricLabel(dir, func(int32) bool { return false }); got != want {
			t.Errorf("MetricLabel(%s) = %q, want %q", dir, got, want)
		}
	}
}
