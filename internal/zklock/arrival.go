package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// ArrivalMutex is a mutex whose waiters are served in the order of their
// arrival times, which each participant gives (NewArrivalMutex), rather
// than in the order their nodes reached ZooKeeper.
//
// Mutex, Curator's InterProcessMutex, serves its waiters in the order of
// their sequence nodes: the order in which their creates reached the
// server. Between a buyer's arrival at a shop and its create, two processes
// on shared CPUs, each with its own connection, reorder the buyers by many
// milliseconds (docs/lock.md measures it). ArrivalMutex keeps the order the
// participants state, within one client and across clients, at the cost of
// two round trips more per hand-off.
//
// The protocol. A participant creates a protected ephemeral sequential
// node "_c_<uuid>-arrival-<µs>-<seq>" under the lock path: its arrival in
// microseconds since 1970, twenty digits, then the sequence number, so the
// names sort by arrival and then by creation. It waits until no node sorts
// ahead of its own (a data watch on the one just ahead, as Mutex does), and
// then takes the turnstile, the persistent node "turnstile" under the lock
// path, whose data names the holder's node ("" when free): by a
// conditional write of the version it read. The write's zxid is the
// fencing token. A turnstile that names a node that no longer exists is
// free: its holder's session ended (or someone deleted the node), so that
// the lock of a holder that died passes on as Mutex's does. A participant
// that finds the turnstile held by a live node (one that went ahead of it
// before its own node existed) watches the turnstile and that node, and
// looks again when either changes. Release clears the turnstile and
// deletes the node.
//
// A newcomer whose arrival is earlier than the nodes waiting goes ahead of
// them, never ahead of the holder. Mutual exclusion does not depend on the
// arrival times, which may come from different clocks: only the order does.
// A hold is lost on the rule of the package (doc.go): the connection
// suspended, the session lost, the client closed, or the node deleted.
//
// Java Curator has no such recipe: participants on one path must all use
// ArrivalMutex (one that finds another recipe's nodes there refuses to
// queue, ErrOtherRecipe).
type ArrivalMutex struct {
	c       *Client
	dir     string
	at      time.Time
	pathErr error

	mu      sync.Mutex
	hold    *hold
	version int32 // the turnstile's version after our write
	alone   bool  // nobody waited behind us when we took the turnstile
}

// ErrOtherRecipe is returned by ArrivalMutex.Acquire when the lock path
// holds the nodes of another recipe (a Mutex's, say): the two protocols do
// not exclude each other.
var ErrOtherRecipe = errors.New("zklock: the lock path holds another recipe's nodes")

const (
	arrivalMarker = "arrival-"
	turnstileName = "turnstile"
	arrivalDigits = 20
)

// NewArrivalMutex returns a handle on the arrival-ordered lock at lockPath
// for a participant that arrived at arrived. It does no I/O. A handle is
// one participant: acquire it once.
func NewArrivalMutex(c *Client, lockPath string, arrived time.Time) *ArrivalMutex {
	return &ArrivalMutex{c: c, dir: lockPath, at: arrived, pathErr: zk.ValidatePath(lockPath)}
}

// arrivalNodeName is the name a participant that arrived at at asks for
// (ZooKeeper appends the sequence number).
func arrivalNodeName(at time.Time) string {
	us := max(at.UnixMicro(), 0)
	s := strconv.FormatInt(us, 10)
	return arrivalMarker + strings.Repeat("0", arrivalDigits-len(s)) + s + "-"
}

// Acquire blocks until the lock is held, or ctx ends. When it gives up it
// deletes its node, so nothing is left behind.
func (m *ArrivalMutex) Acquire(ctx context.Context) error {
	if m.pathErr != nil {
		return m.pathErr
	}
	if m.current() != nil {
		return fmt.Errorf("zklock: %s: an ArrivalMutex handle is acquired once", m.dir)
	}
	start := time.Now()
	m.c.joinArrivals(m.dir, 1)
	for n := 0; ; n++ {
		err := m.enter(ctx, start)
		if err == nil {
			return nil
		}
		if m.c.joinArrivals(m.dir, -1) == 0 { // gave up, or tries again (and counts again)
			m.tidy()
		}
		if !errors.Is(err, zk.ErrSessionLost) && !errors.Is(err, errNodeGone) {
			return fmt.Errorf("zklock: acquire %s: %w", m.dir, err)
		}
		if berr := m.c.Backoff(ctx, n); berr != nil {
			return fmt.Errorf("zklock: acquire %s: %w", m.dir, err)
		}
		m.c.joinArrivals(m.dir, 1)
	}
}

// enter is one attempt: our node, the wait, the turnstile.
func (m *ArrivalMutex) enter(ctx context.Context, start time.Time) error {
	s, err := m.c.Session(ctx)
	if err != nil {
		return err
	}
	node, err := m.c.CreateProtected(ctx, s, m.dir, arrivalNodeName(m.at), m.c.opts.NodeData)
	if err != nil {
		return err
	}
	st, err := m.await(ctx, s, node)
	if err != nil {
		if derr := m.c.DeleteNode(node, s); derr != nil {
			m.c.Logger().Warn("could not delete an abandoned queue node", "node", node, "err", derr)
		}
		return err
	}
	h := newHold(m.c, node, s, nil)
	h.token.set(st.Mzxid) // the turnstile's write, not the node's create, orders the holders
	m.mu.Lock()
	m.hold, m.version = h, st.Version
	m.mu.Unlock()
	if o := m.c.opts.Observer; o != nil {
		o.LockAcquired(m.dir, h.since.Sub(start))
	}
	return nil
}

// await waits until our node is first and the turnstile is ours; it returns
// the turnstile's stat after our write.
func (m *ArrivalMutex) await(ctx context.Context, s *zk.Session, node string) (*zk.Stat, error) {
	name := path.Base(node)
	var early <-chan turnstileRead
	for {
		kids, err := m.c.sharedChildren(ctx, m.dir, []string{arrivalMarker})
		if err != nil {
			return nil, err
		}
		found, ahead, err := arrivalPlace(kids, name)
		switch {
		case err != nil:
			return nil, err
		case !found:
			select {
			case <-s.Done():
				return nil, zk.ErrSessionLost
			default:
				return nil, errNodeGone
			}
		case ahead != "":
			if err := m.waitGone(ctx, s, path.Join(m.dir, ahead)); err != nil {
				return nil, err
			}
			// The node ahead has gone, so ours is likely first: the
			// turnstile is read beside the listing, a round trip saved.
			early = m.readEarly(ctx)
			continue
		}
		st, err := m.turn(ctx, s, name, early)
		if st != nil {
			m.mu.Lock()
			m.alone = len(kids) <= 2 // ours, and perhaps the turnstile
			m.mu.Unlock()
		}
		if st != nil || err != nil {
			return st, err
		}
		early = nil
	}
}

// arrivalPlace finds our node among the lock path's children and the
// waiter just ahead of it ("" when none is): the largest name below ours by
// arrival, then sequence. A child of another recipe is ErrOtherRecipe.
func arrivalPlace(kids []string, name string) (found bool, ahead string, err error) {
	key := sequenceKey(name, arrivalMarker)
	var aheadKey string
	for _, k := range kids {
		switch {
		case k == name:
			found = true
			continue
		case k == turnstileName:
			continue
		case !isProtected(k) || !strings.Contains(k, arrivalMarker):
			return false, "", fmt.Errorf("%w: %s", ErrOtherRecipe, k)
		}
		if kk := sequenceKey(k, arrivalMarker); kk < key && (ahead == "" || kk > aheadKey) {
			ahead, aheadKey = k, kk
		}
	}
	return found, ahead, nil
}

// Release clears the turnstile and deletes our node, in one request; when
// nobody waited as we took the lock it deletes the turnstile instead, so
// that an idle lock path is empty and its container is reaped (a waiter
// who came meanwhile makes the turnstile again). If ctx ends first the
// delete goes on in the background and Release returns nil: the lock is
// released either way (a turnstile left naming a deleted node is free). It
// returns ErrNotHeld when the handle does not hold the lock.
func (m *ArrivalMutex) Release(ctx context.Context) error {
	m.mu.Lock()
	h, v, alone := m.hold, m.version, m.alone
	m.hold = nil
	m.mu.Unlock()
	if h == nil {
		return ErrNotHeld
	}
	if o := m.c.opts.Observer; o != nil {
		o.LockReleased(m.dir, time.Since(h.since))
	}
	turnstile := path.Join(m.dir, turnstileName)
	released := false
	if alone {
		released = m.c.DeleteBoth(ctx, turnstile, v, h.node, h.sess)
	} else {
		released = m.c.SetAndDelete(ctx, turnstile, nil, v, h.node, h.sess)
	}
	var err error
	if released {
		h.ended()
	} else {
		// The connection, or a turnstile taken over from a holder thought
		// dead: the node's delete alone frees the lock.
		err = h.end(ctx)
	}
	if m.c.joinArrivals(m.dir, -1) == 0 && !alone {
		m.tidy() // those who waited behind us may all have given up
	}
	if err != nil {
		return fmt.Errorf("zklock: release %s: %w", m.dir, err)
	}
	return nil
}

// NextArrival lists the lock's participants now and returns the earliest
// arrival among those waiting behind the hold: whom the lock goes to next,
// unless an earlier one comes. ok is false when nobody waits. A holder that
// serves several buyers under one hold (a batch) serves only those who
// arrived before it, so that the order holds across participants.
func (m *ArrivalMutex) NextArrival(ctx context.Context) (at time.Time, ok bool, err error) {
	h := m.current()
	if h == nil {
		return time.Time{}, false, ErrNotHeld
	}
	kids, err := m.c.sharedChildren(ctx, m.dir, []string{arrivalMarker})
	if err != nil {
		return time.Time{}, false, err
	}
	own := path.Base(h.node)
	var next string
	for _, k := range kids {
		if k == own || k == turnstileName || !strings.Contains(k, arrivalMarker) {
			continue
		}
		if kk := sequenceKey(k, arrivalMarker); next == "" || kk < next {
			next = kk
		}
	}
	if next == "" {
		return time.Time{}, false, nil
	}
	us, err := strconv.ParseInt(next[:min(arrivalDigits, len(next))], 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("zklock: %s: a participant's name has no arrival: %w", m.dir, err)
	}
	return time.UnixMicro(us), true, nil
}

// Lost is closed when the hold can no longer be trusted (Mutex.Lost); a
// handle that holds nothing returns a closed channel.
func (m *ArrivalMutex) Lost() <-chan struct{} { return lostOf(m.current()) }

// Token is the hold's fencing token: the zxid of its write of the
// turnstile, which strictly increases from holder to holder on the path.
// ErrNotHeld when nothing is held.
func (m *ArrivalMutex) Token(ctx context.Context) (int64, error) {
	return tokenOf(ctx, m.current())
}

// current is the hold, nil when none.
func (m *ArrivalMutex) current() *hold {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hold
}
