package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// zkLocker gives the service a ZooKeeper mutex per purchase, on a fixed path
// (the seed's /Locks) or on one per goods when the path holds {goodsNo}.
type zkLocker struct {
	client *zklock.Client
	path   string
}

func newZKLocker(c *zklock.Client, path string) *zkLocker {
	return &zkLocker{client: c, path: path}
}

func (l *zkLocker) lockPath(goodsNo int32) string {
	return strings.ReplaceAll(l.path, goodsNoPlaceholder, strconv.FormatInt(int64(goodsNo), 10))
}

// Lock acquires a new mutex handle: each purchase is its own participant.
func (l *zkLocker) Lock(ctx context.Context, goodsNo int32) (service.Lease, error) {
	m := zklock.NewMutex(l.client, l.lockPath(goodsNo))
	m.FetchTokenEarly() // every purchase fences its transaction with the token
	if err := m.Acquire(ctx); err != nil {
		return nil, err
	}
	return mutexLease{m}, nil
}

type mutexLease struct{ m *zklock.Mutex }

func (l mutexLease) Lost() <-chan struct{}                    { return l.m.Lost() }
func (l mutexLease) Token(ctx context.Context) (int64, error) { return l.m.Token(ctx) }
func (l mutexLease) Unlock(ctx context.Context) error         { return l.m.Release(ctx) }
