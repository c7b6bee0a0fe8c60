// Package coord is the shop's coordination on ZooKeeper: the purchase lock
// (the service's Locker, a zklock.Mutex per purchase, fenced by its token)
// and the order sweeper's election (the handler's Election, a
// zklock.LeaderSelector whose term is the sweep loop). It adapts the
// interfaces the service and the handler declare to internal/zklock's
// recipes.
package coord

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// GoodsNoPlaceholder in a lock path makes one lock per goods.
const GoodsNoPlaceholder = "{goodsNo}"

// StripePlaceholder in a lock path makes a fixed number of locks, the
// stripes, each the lock of every goods whose number modulo the number of
// stripes is its own: a sale of any number of goods takes at most that
// many locks, and the batch strategy sells the waiting buyers of a
// stripe's goods under one hold.
const StripePlaceholder = "{stripe}"

// Locker gives the service a ZooKeeper mutex per purchase, on its Paths.
type Locker struct {
	client *zklock.Client
	Paths
	// NoAuth, if set, is told when ZooKeeper refuses a purchase's lock
	// (zk.ErrNoAuth: a node on its path has an ACL not the shop's).
	NoAuth func(error)
	// ByArrival: each purchase waits in a zklock.ArrivalMutex, served by
	// the buyer's arrival across the instances; else in a zklock.Mutex,
	// Curator's, served by when its node reached ZooKeeper.
	ByArrival bool
	// ManyGoods, if set, is called once, when purchases of a second goods
	// come: the lock paths' advice for a sale of many goods is due then,
	// not at every start.
	ManyGoods func()
	first     atomic.Int32 // the first goods purchased
	many      sync.Once
}

// NewLocker returns the purchase lock on c at the paths of p.
func NewLocker(c *zklock.Client, p Paths) *Locker {
	return &Locker{client: c, Paths: p}
}

// Paths are the purchase locks' paths: a fixed path (the seed's /Locks), one
// per goods when the path holds GoodsNoPlaceholder, or one per stripe when
// it holds StripePlaceholder.
type Paths struct {
	path    string
	stripes int32
}

// NewPaths returns the lock paths of the template path; stripes is the
// number of stripes of a path with StripePlaceholder (at least 1).
func NewPaths(path string, stripes int) Paths {
	return Paths{path: path, stripes: int32(max(stripes, 1))}
}

// Path is the lock path of goodsNo.
func (l Paths) Path(goodsNo int32) string {
	switch {
	case strings.Contains(l.path, GoodsNoPlaceholder):
		return strings.ReplaceAll(l.path, GoodsNoPlaceholder, strconv.FormatInt(int64(goodsNo), 10))
	case strings.Contains(l.path, StripePlaceholder):
		return strings.ReplaceAll(l.path, StripePlaceholder, strconv.FormatInt(int64(l.Stripe(goodsNo)), 10))
	}
	return l.path // a fixed path: nothing to format on a purchase's way
}

// Stripe is the stripe of goodsNo.
func (l Paths) Stripe(goodsNo int32) int32 { return int32(uint32(goodsNo) % uint32(l.stripes)) }

// PerGoods reports whether each goods has a lock of its own.
func (l Paths) PerGoods() bool { return strings.Contains(l.path, GoodsNoPlaceholder) }

// Lock acquires a new mutex handle: each purchase is its own participant,
// which arrived at arrived.
func (l *Locker) Lock(ctx context.Context, goodsNo int32, arrived time.Time) (service.Lease, error) {
	if l.ManyGoods != nil && !l.first.CompareAndSwap(0, goodsNo) && l.first.Load() != goodsNo {
		l.many.Do(l.ManyGoods)
	}
	var lease service.Lease
	var err error
	if l.ByArrival {
		m := zklock.NewArrivalMutex(l.client, l.Path(goodsNo), arrived)
		lease, err = arrivalLease{m}, m.Acquire(ctx)
	} else {
		m := zklock.NewMutex(l.client, l.Path(goodsNo))
		m.FetchTokenEarly() // every purchase fences its transaction with the token
		lease, err = mutexLease{m}, m.Acquire(ctx)
	}
	if err != nil {
		if l.NoAuth != nil && errors.Is(err, zk.ErrNoAuth) {
			l.NoAuth(err)
		}
		return nil, err
	}
	return lease, nil
}

// Unreachable is non-nil while the ZooKeeper session is lost and no new
// one is made (service's locking asks before each lock): a buyer then hears
// 503 at once instead of waiting the acquire timeout out.
func (l *Locker) Unreachable() error {
	if l.client.SessionLost() {
		return errors.New("no ZooKeeper session: the connection has been down for a whole session timeout")
	}
	return nil
}

// LockKey is the lock path of goodsNo: goods of one path share one lock
// (service.LockKeyer).
func (l *Locker) LockKey(goodsNo int32) string { return l.Path(goodsNo) }

type mutexLease struct{ m *zklock.Mutex }

func (l mutexLease) Lost() <-chan struct{}                    { return l.m.Lost() }
func (l mutexLease) Token(ctx context.Context) (int64, error) { return l.m.Token(ctx) }
func (l mutexLease) Unlock(ctx context.Context) error         { return l.m.Release(ctx) }

type arrivalLease struct{ m *zklock.ArrivalMutex }

func (l arrivalLease) Lost() <-chan struct{}                    { return l.m.Lost() }
func (l arrivalLease) Token(ctx context.Context) (int64, error) { return l.m.Token(ctx) }
func (l arrivalLease) Unlock(ctx context.Context) error         { return l.m.Release(ctx) }

// NextArrival is the arrival of the earliest purchase waiting behind the
// hold (service.ArrivalCutter).
func (l arrivalLease) NextArrival(ctx context.Context) (time.Time, bool, error) {
	return l.m.NextArrival(ctx)
}

// goodsOf returns the goods number whose lock lives at dir, if dir is one of
// this locker's paths.
func (l Paths) goodsOf(dir string) (int32, bool) {
	return l.numberAt(dir, GoodsNoPlaceholder)
}

// numberAt returns the number that placeholder stands for in dir, if dir is
// the path with a positive number in its place.
func (l Paths) numberAt(dir, placeholder string) (int32, bool) {
	before, after, ok := strings.Cut(l.path, placeholder)
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
	if err != nil || n < 0 || n == 0 && placeholder == GoodsNoPlaceholder || strconv.FormatInt(n, 10) != mid {
		return 0, false
	}
	return int32(n), true
}

// MetricLabel is the lock-path label of the lock node directory dir: the
// path itself for a fixed path, a stripe, or a goods the metrics track,
// "other" for another goods' lock, "" for locks that are not purchase locks.
func (l Paths) MetricLabel(dir string, tracked func(int32) bool) string {
	if strings.Contains(l.path, StripePlaceholder) {
		if n, ok := l.numberAt(dir, StripePlaceholder); ok && n < l.stripes {
			return dir
		}
		return ""
	}
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
