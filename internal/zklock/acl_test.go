package zklock_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// connectAs is a client that authenticates as the digest identity.
func connectAs(t *testing.T, digest string) *zklock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := dial(ctx, e2e.ZooKeeper(t), zk.Options{SessionTimeout: 10 * time.Second, Digest: digest}, zklock.Options{})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// A lock taken by a client with a digest identity is closed to strangers:
// an unauthenticated client can read it, but neither queue on it (create a
// child) nor delete the holder's node (NoAuth); another client of the same
// identity takes the lock after the holder as usual.
func TestLockNodesAreClosedToStrangers(t *testing.T) {
	ctx := testCtx(t)
	lockPath := e2e.Path(t) + "/acl/lock"
	holder, peer := connectAs(t, e2e.ZKDigest), connectAs(t, e2e.ZKDigest)
	m := zklock.NewMutex(holder, lockPath)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	outsider, _, err := gozk.Connect(e2e.ZooKeeper(t), 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer outsider.Close()
	kids, _, err := outsider.Children(lockPath)
	if err != nil || !slices.Contains(kids, m.Node()[len(lockPath)+1:]) {
		t.Fatalf("the outsider reads the queue: %v, %v; want the holder's node", kids, err)
	}
	if _, err := outsider.Create(lockPath+"/_c_0000-lock-", nil, gozk.FlagEphemeralSequential, gozk.WorldACL(gozk.PermAll)); !errors.Is(err, gozk.ErrNoAuth) {
		t.Errorf("the outsider queues on the lock: %v, want NoAuth", err)
	}
	if err := outsider.Delete(m.Node(), -1); !errors.Is(err, gozk.ErrNoAuth) {
		t.Errorf("the outsider deletes the holder's node: %v, want NoAuth", err)
	}
	acl, _, err := outsider.GetACL(m.Node())
	if err != nil || len(acl) != 2 || acl[0].Scheme != "digest" || acl[0].Perms != gozk.PermAll || acl[1].Scheme != "world" || acl[1].Perms != gozk.PermRead {
		t.Errorf("the holder's node's ACL: %+v, %v; want the identity's ALL and the world's READ", acl, err)
	}
	// A second client of the identity queues and takes the lock on release.
	next := zklock.NewMutex(peer, lockPath)
	got := make(chan error, 1)
	go func() { got <- next.Acquire(ctx) }()
	time.Sleep(100 * time.Millisecond)
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e2e.Receive(t, got, 30*time.Second, "the peer's acquisition"); err != nil {
		t.Fatalf("the peer of the same identity: %v", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A bad identity is refused before a session is used.
func TestDigestMustBeUserAndPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, bad := range []string{"nopassword", ":pw", "user:"} {
		if c, err := zk.Connect(ctx, e2e.ZooKeeper(t), zk.Options{Digest: bad}); err == nil {
			c.Close()
			t.Errorf("digest %q accepted", bad)
		}
	}
}
