// Package coord is the shop's coordination on ZooKeeper: the purchase lock
// (the service's Locker, a zklock.Mutex per purchase, fenced by its token)
// and the order sweeper's election (the handler's Election, a
// zklock.LeaderSelector whose term is the sweep loop). It adapts the
// interfaces the service and the handler declare to internal/zklock's
// recipes.
package coord

import (
	"context"
	"strconv"
	"strings"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// GoodsNoPlaceholder in a lock path makes one lock per goods.
const GoodsNoPlaceholder = "{goodsNo}"

// Locker gives the service a ZooKeeper mutex per purchase, on its Paths.
type Locker struct {
	client *zklock.Client
	Paths
}

// NewLocker returns the purchase lock on c at path (which may hold
// GoodsNoPlaceholder).
func NewLocker(c *zklock.Client, path string) *Locker {
	return &Locker{client: c, Paths: Paths{path}}
}

// Paths are the purchase locks' paths: a fixed path (the seed's /Locks), or
// one per goods when the path holds GoodsNoPlaceholder.
type Paths struct{ path string }

// NewPaths returns the lock paths of the template path.
func NewPaths(path string) Paths { return Paths{path} }

// Path is the lock path of goodsNo.
func (l Paths) Path(goodsNo int32) string {
	return strings.ReplaceAll(l.path, GoodsNoPlaceholder, strconv.FormatInt(int64(goodsNo), 10))
}

// Lock acquires a new mutex handle: each purchase is its own participant.
func (l *Locker) Lock(ctx context.Context, goodsNo int32) (service.Lease, error) {
	m := zklock.NewMutex(l.client, l.Path(goodsNo))
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
func (l Paths) goodsOf(dir string) (int32, bool) {
	before, after, ok := strings.Cut(l.path, GoodsNoPlaceholder)
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

// MetricLabel is the lock-path label of the lock node directory dir: the
// path itself for a fixed path or a goods the metrics track, "other" for
// another goods' lock, "" for locks that are not purchase locks.
func (l Paths) MetricLabel(dir string, tracked func(int32) bool) string {
	if !strings.Contains(l.path, GoodsNoPlaceholder) {
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
