package coord

import (
	"context"
	"sync"

	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// LeaseNodes are the allot strategy's lease nodes (service.LeaseNodes):
// ephemeral nodes under dir, one per lease, each in the session that was
// live when it was made.
type LeaseNodes struct {
	client *zklock.Client
	dir    string

	mu    sync.Mutex
	owner map[string]*zk.Session // the nodes made here, by their sessions
}

// NewLeaseNodes returns the lease nodes under dir.
func NewLeaseNodes(c *zklock.Client, dir string) *LeaseNodes {
	return &LeaseNodes{client: c, dir: dir, owner: map[string]*zk.Session{}}
}

// Create makes a node for a new lease in the current session.
func (l *LeaseNodes) Create(ctx context.Context) (string, <-chan struct{}, error) {
	s, err := l.client.Session(ctx)
	if err != nil {
		return "", nil, err
	}
	node, err := l.client.CreateProtected(ctx, s, l.dir, "lease-", nil)
	if err != nil {
		return "", nil, err
	}
	l.mu.Lock()
	l.owner[node] = s
	l.mu.Unlock()
	return node, s.Done(), nil
}

// Exists reports whether a lease's node is there: whether its owner's
// session lives.
func (l *LeaseNodes) Exists(ctx context.Context, node string) (bool, error) {
	ok, _, err := l.client.Exists(ctx, node)
	return ok, err
}

// Delete deletes a node made here; one of another session dies with it.
func (l *LeaseNodes) Delete(_ context.Context, node string) error {
	l.mu.Lock()
	s, ok := l.owner[node]
	delete(l.owner, node)
	l.mu.Unlock()
	if !ok {
		return nil
	}
	return l.client.DeleteNode(node, s)
}
