package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// zkLocker gives the service a ZooKeeper mutex per purchase, on its
// lockPaths.
type zkLocker struct {
	client *zklock.Client
	lockPaths
}

func newZKLocker(c *zklock.Client, path string) *zkLocker {
	return &zkLocker{client: c, lockPaths: lockPaths{path}}
}

// lockPaths are the purchase locks' paths: a fixed path (the seed's
// /Locks), or one per goods when the path holds {goodsNo}.
type lockPaths struct{ path string }

func (l lockPaths) lockPath(goodsNo int32) string {
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

// goodsOf returns the goods number whose lock lives at dir, if dir is one of
// this locker's paths.
func (l lockPaths) goodsOf(dir string) (int32, bool) {
	before, after, ok := strings.Cut(l.path, goodsNoPlaceholder)
	if !ok {
		return 0, false
	}
	mid, ok := strings.CutPrefix(dir, before)
	if !ok {
		return 0, false
	}
	mid, ok = strings.CutSuffix(mid, after)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(mid, 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int32(n), true
}

// metricLabel is the lock-path label of the lock node directory dir: the
// path itself for a fixed path or a goods the metrics track, "other" for
// another goods' lock, "" for locks that are not purchase locks.
func (l lockPaths) metricLabel(dir string, tracked func(int32) bool) string {
	if !strings.Contains(l.path, goodsNoPlaceholder) {
		if dir == l.path {
			return dir
		}
		return ""
	}
	goods, ok := l.goodsOf(dir)
	switch {
	case !ok:
		return ""
	case tracked(goods):
		return dir
	default:
		return "other"
	}
}
