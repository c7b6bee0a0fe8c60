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

// LatchListener hears a LeaderLatch gain and lose leadership. Either field
// may be nil. Calls come in order from the latch's goroutine.
type LatchListener struct {
	IsLeader  func()
	NotLeader func()
}

// LeaderLatch is Curator's LeaderLatch: every participant creates
// "<path>/_c_<uuid>-latch-<seq>" with its id as data; the first in sequence
// order is the leader, but only while that node's ephemeralOwner is our
// session. Leadership is dropped at once when the connection is suspended or
// the session lost, and re-contended (with a new node) on reconnect.
type LeaderLatch struct {
	c  *Client
	p  string
	id string

	mu        sync.Mutex
	leader    bool
	leaderCh  chan struct{} // closed while leader
	node      string
	started   bool
	closed    bool
	stop      chan struct{}
	done      chan struct{}
	listeners []LatchListener
	states    chan zk.State
}

// NewLeaderLatch returns a latch at latchPath for the participant id.
func NewLeaderLatch(c *Client, latchPath, id string) *LeaderLatch {
	return &LeaderLatch{c: c, p: latchPath, id: id, leaderCh: make(chan struct{}), states: make(chan zk.State, 16)}
}

// Listen adds a listener; call it before Start to hear the first change.
func (l *LeaderLatch) Listen(ll LatchListener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listeners = append(l.listeners, ll)
}

// Start joins the election: it creates the latch node and returns; the
// latch then follows the election in the background until Close.
func (l *LeaderLatch) Start(ctx context.Context) error {
	if err := zk.ValidatePath(l.p); err != nil {
		return err
	}
	l.mu.Lock()
	if l.started || l.closed {
		l.mu.Unlock()
		return errors.New("zklock: leader latch already started")
	}
	l.started = true
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	l.mu.Unlock()
	node, err := l.create(ctx)
	if err != nil {
		l.mu.Lock()
		l.started = false
		l.mu.Unlock()
		return err
	}
	remove := l.c.Listen(func(st zk.State) {
		select {
		case l.states <- st:
		default: // a burst of changes: the latest few are enough to re-check
		}
	})
	l.c.Background(func(bg context.Context) {
		defer close(l.done)
		defer remove()
		l.run(bg, node)
	})
	return nil
}

func (l *LeaderLatch) create(ctx context.Context) (string, error) {
	s, err := l.c.Session(ctx)
	if err != nil {
		return "", err
	}
	node, err := l.c.CreateProtected(ctx, s, l.p, latchMarker, []byte(l.id))
	if err != nil {
		return "", fmt.Errorf("zklock: leader latch %s: %w", l.p, err)
	}
	l.mu.Lock()
	l.node = node
	l.mu.Unlock()
	return node, nil
}

// run follows the election: check, watch the node ahead (or our own as
// leader), react to connection states, until stopped.
func (l *LeaderLatch) run(bg context.Context, node string) {
	for n := 0; ; {
		var watch <-chan zk.Event
		var err error
		if node == "" {
			node, err = l.create(bg)
		}
		if err == nil {
			watch, err = l.check(bg, node)
		}
		if err != nil {
			l.setLeader(false)
			if errors.Is(err, errNodeGone) {
				node = ""
				continue
			}
			if l.c.SleepOrStop(bg, l.stop, n) {
				return
			}
			n++
			continue
		}
		n = 0
		select {
		case <-watch:
		case st := <-l.states:
			switch st {
			case zk.StateSuspended, zk.StateLost:
				l.setLeader(false)
			case zk.StateReconnected:
				// Curator's reset: leave the queue and join it again.
				l.setLeader(false)
				if s, err := l.c.Session(bg); err == nil {
					_ = l.c.DeleteNode(node, s) // retried in the background itself
				}
				node = ""
			}
		case <-l.stop:
			return
		case <-bg.Done():
			return
		}
	}
}

// check decides leadership from the sorted children and returns the watch to
// wait on: on our own node when leading, on the one ahead otherwise.
func (l *LeaderLatch) check(ctx context.Context, node string) (<-chan zk.Event, error) {
	kids, err := l.c.Children(ctx, l.p)
	if err != nil {
		return nil, err
	}
	sortNodes(kids, latchMarker)
	i := slices.Index(kids, path.Base(node))
	switch {
	case i < 0:
		return nil, errNodeGone
	case i == 0:
		_, stat, ch, err := l.c.GetW(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, errNodeGone
		}
		if err != nil {
			return nil, err
		}
		l.setLeader(stat.EphemeralOwner == l.c.SessionID())
		return ch, nil
	default:
		l.setLeader(false)
		_, _, ch, err := l.c.GetW(ctx, path.Join(l.p, kids[i-1]))
		if errors.Is(err, zk.ErrNoNode) {
			closed := make(chan zk.Event)
			close(closed)
			return closed, nil // gone already: check again at once
		}
		return ch, err
	}
}

func (l *LeaderLatch) setLeader(leader bool) {
	l.mu.Lock()
	if l.leader == leader {
		l.mu.Unlock()
		return
	}
	l.leader = leader
	if leader {
		close(l.leaderCh)
	} else {
		l.leaderCh = make(chan struct{})
	}
	ls := slices.Clone(l.listeners)
	l.mu.Unlock()
	for _, ll := range ls {
		if leader && ll.IsLeader != nil {
			ll.IsLeader()
		}
		if !leader && ll.NotLeader != nil {
			ll.NotLeader()
		}
	}
}

// HasLeadership reports whether this participant leads now.
func (l *LeaderLatch) HasLeadership() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader
}

// Await blocks until this participant leads, or ctx ends, or the latch closes.
func (l *LeaderLatch) Await(ctx context.Context) error {
	for {
		l.mu.Lock()
		ch, started, done := l.leaderCh, l.started, l.done
		l.mu.Unlock()
		if !started {
			return ErrNotStarted
		}
		select {
		case <-ch:
			return nil
		case <-done:
			return ErrNotStarted
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ID is the participant id.
func (l *LeaderLatch) ID() string { return l.id }

// Participants returns the ids of all participants in election order, the
// leader first.
func (l *LeaderLatch) Participants(ctx context.Context) ([]string, error) {
	return participantIDs(ctx, l.c, l.p, latchMarker)
}

// Close leaves the election: leadership ends, the node is deleted.
func (l *LeaderLatch) Close(ctx context.Context) error {
	l.mu.Lock()
	if !l.started || l.closed {
		l.mu.Unlock()
		return ErrNotStarted
	}
	l.closed = true
	close(l.stop)
	done := l.done
	l.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.setLeader(false)
	l.mu.Lock()
	node := l.node
	l.mu.Unlock()
	s, err := l.c.Session(ctx)
	if err != nil {
		return nil // no session: the node dies with the old one
	}
	return l.c.DeleteNode(node, s)
}

// participantIDs reads the data (participant ids) of a queue's nodes in order.
func participantIDs(ctx context.Context, c *Client, dir, marker string) ([]string, error) {
	q := queue{c: c, dir: dir, rule: rule{markers: []string{marker}}}
	nodes, err := q.participants(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range nodes {
		var data []byte
		err := c.Retry(ctx, func() (err error) {
			data, _, err = c.Get(ctx, n)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, string(data))
	}
	return ids, nil
}
