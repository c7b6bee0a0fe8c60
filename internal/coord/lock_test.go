package coord

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/itest"
	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// The purchase's lease says when its lock is lost: the purchase checks it
// before it commits. Here the lock node is deleted under it (as an admin
// or a session's end would): Lost must close. Fails when the lease's Lost
// is a channel that never closes.
func TestALeaseIsLostWhenItsNodeGoes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *zklock.Client {
		conn, err := zk.Connect(ctx, itest.ZooKeeper(t), zk.Options{SessionTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		return zklock.New(conn, zklock.Options{})
	}
	c, observer := connect(), connect()
	locker := NewLocker(c, itest.Path(t)+"/goods/"+GoodsNoPlaceholder)
	lease, err := locker.Lock(ctx, 7)
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
	l := NewPaths("/locks/goods/{goodsNo}")
	if got := l.Path(42); got != "/locks/goods/42" {
		t.Fatalf("Path(42) = %q", got)
	}
	if got := NewPaths("/Locks").Path(42); got != "/Locks" {
		t.Fatalf("fixed path became %q", got)
	}
}
