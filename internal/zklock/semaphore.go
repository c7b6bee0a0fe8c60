package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// ErrNotReentrant is returned by SemaphoreMutex.Acquire on a handle that
// holds it already.
var ErrNotReentrant = errors.New("zklock: semaphore mutex is not reentrant")

// SemaphoreV2 is Curator's InterProcessSemaphoreV2: at most maxLeases leases
// are out at once across all clients. Layout: <path>/locks is a Mutex that
// serialises acquirers, <path>/leases holds one "_c_<uuid>-lease-<seq>" node
// per lease. An acquirer takes the mutex, creates its lease node, waits
// (watching the leases' children) until there are no more than maxLeases,
// then releases the mutex.
type SemaphoreV2 struct {
	c         *Client
	locksPath string
	leasePath string
	maxLeases func() int32
	changes   func() <-chan struct{} // a channel closed when maxLeases may have changed
}

// NewSemaphoreV2 returns a semaphore of maxLeases leases at semPath.
func NewSemaphoreV2(c *Client, semPath string, maxLeases int32) *SemaphoreV2 {
	never := make(chan struct{})
	return &SemaphoreV2{
		c: c, locksPath: path.Join(semPath, "locks"), leasePath: path.Join(semPath, "leases"),
		maxLeases: func() int32 { return maxLeases },
		changes:   func() <-chan struct{} { return never },
	}
}

// NewSemaphoreV2WithCount returns a semaphore whose number of leases is the
// started SharedCount's current value, followed as it changes.
func NewSemaphoreV2WithCount(c *Client, semPath string, count *SharedCount) *SemaphoreV2 {
	return &SemaphoreV2{
		c: c, locksPath: path.Join(semPath, "locks"), leasePath: path.Join(semPath, "leases"),
		maxLeases: count.Count,
		changes:   count.changes,
	}
}

// Lease is one lease of a semaphore. Return it with Release.
type Lease struct {
	hold *hold
	once sync.Once
}

// Node is the lease's node path.
func (l *Lease) Node() string { return l.hold.node }

// Lost returns a channel that is closed when the lease can no longer be
// trusted to be held (the rule in the package's doc, as for a Mutex: the
// connection was suspended, the session was lost, the client closed, or the
// lease's node was deleted). The lease is watched (one read) from the first
// call of Lost or Token. The holder must still call Release.
func (l *Lease) Lost() <-chan struct{} { return l.hold.Lost() }

// Token returns the lease's fencing token, the create zxid of its node (see
// Mutex.Token); the first call of Lost or Token reads it. Leases held at
// once are not ordered among themselves, so a token fences a resource only
// where one lease is out at a time (a SemaphoreMutex, or a semaphore of one
// lease). It returns ErrLost when the lease was lost before its token was
// known.
func (l *Lease) Token(ctx context.Context) (int64, error) { return l.hold.Token(ctx) }

// Release returns the lease: its node is deleted, retried in the background
// through connection loss until it or its session is gone. If ctx ends first
// (or has ended already), the delete goes on in the background.
func (l *Lease) Release(ctx context.Context) error {
	var err error
	l.once.Do(func() { err = l.hold.end(ctx) })
	return err
}

// Acquire waits for one lease.
func (s *SemaphoreV2) Acquire(ctx context.Context) (*Lease, error) {
	leases, err := s.AcquireN(ctx, 1)
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// AcquireN waits for n leases; on failure it returns none (those taken are
// returned).
func (s *SemaphoreV2) AcquireN(ctx context.Context, n int) ([]*Lease, error) {
	if err := zk.ValidatePath(s.leasePath); err != nil {
		return nil, err
	}
	var got []*Lease
	for range n {
		l, err := s.acquireOne(ctx)
		if err != nil {
			for _, l := range got {
				_ = l.Release(context.WithoutCancel(ctx)) // errors are retried in the background
			}
			return nil, err
		}
		got = append(got, l)
	}
	return got, nil
}

func (s *SemaphoreV2) acquireOne(ctx context.Context) (*Lease, error) {
	lock := NewMutex(s.c, s.locksPath)
	if err := lock.Acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }() // failures retried in the background

	sess, err := s.c.Session(ctx)
	if err != nil {
		return nil, err
	}
	node, err := s.c.CreateProtected(ctx, sess, s.leasePath, leaseMarker, s.c.opts.NodeData)
	if err != nil {
		return nil, fmt.Errorf("zklock: semaphore %s: %w", path.Dir(s.leasePath), err)
	}
	lease := &Lease{hold: newHold(s.c, node, sess, nil)}
	if err := s.await(ctx, sess, path.Base(node)); err != nil {
		_ = lease.Release(context.WithoutCancel(ctx)) // retried in the background
		return nil, fmt.Errorf("zklock: semaphore %s: %w", path.Dir(s.leasePath), err)
	}
	return lease, nil
}

// await waits, holding the semaphore's mutex, until the leases are no more
// than allowed.
func (s *SemaphoreV2) await(ctx context.Context, sess *zk.Session, name string) error {
	for {
		changed := s.changes()
		var kids []string
		var ch <-chan zk.Event
		err := s.c.Retry(ctx, func() (err error) {
			kids, ch, err = s.c.ChildrenW(ctx, s.leasePath)
			return err
		})
		if err != nil {
			return err
		}
		if !slices.Contains(kids, name) {
			return zk.ErrSessionLost // our lease node died with its session
		}
		if int32(len(kids)) <= s.maxLeases() {
			return nil
		}
		select {
		case <-ch:
		case <-changed:
		case <-sess.Done():
			return zk.ErrSessionLost
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SemaphoreMutex is Curator's InterProcessSemaphoreMutex: a SemaphoreV2 of
// one lease used as a lock. Unlike Mutex it is not reentrant.
type SemaphoreMutex struct {
	sem *SemaphoreV2

	mu    sync.Mutex
	lease *Lease
}

// NewSemaphoreMutex returns a handle on the semaphore mutex at lockPath.
func NewSemaphoreMutex(c *Client, lockPath string) *SemaphoreMutex {
	return &SemaphoreMutex{sem: NewSemaphoreV2(c, lockPath, 1)}
}

// Acquire waits for the lock; ErrNotReentrant if this handle holds it.
func (m *SemaphoreMutex) Acquire(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease != nil {
		return ErrNotReentrant
	}
	l, err := m.sem.Acquire(ctx)
	if err != nil {
		return err
	}
	m.lease = l
	return nil
}

// Release releases the lock; ErrNotHeld if this handle does not hold it.
func (m *SemaphoreMutex) Release(ctx context.Context) error {
	m.mu.Lock()
	l := m.lease
	m.lease = nil
	m.mu.Unlock()
	if l == nil {
		return ErrNotHeld
	}
	return l.Release(ctx)
}

// Token returns the fencing token of the held lease (see Lease.Token), or
// ErrNotHeld. Holders follow each other, so tokens increase from one to the next.
func (m *SemaphoreMutex) Token(ctx context.Context) (int64, error) {
	m.mu.Lock()
	l := m.lease
	m.mu.Unlock()
	if l == nil {
		return 0, ErrNotHeld
	}
	return l.Token(ctx)
}

// Lost returns a channel that is closed when the held lease is lost (see
// Lease.Lost); a closed channel when nothing is held.
func (m *SemaphoreMutex) Lost() <-chan struct{} {
	m.mu.Lock()
	l := m.lease
	m.mu.Unlock()
	if l == nil {
		return closedChan
	}
	return l.Lost()
}

// IsHeld reports whether this handle holds the lock.
func (m *SemaphoreMutex) IsHeld() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease != nil
}
