package zklock

import (
	"context"
	"sync"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Shared queue listings.
//
// A waiter lists the queue when it joins, and again when a deletion wakes it
// and the rule cannot settle its place without a listing. Each listing
// returns every node of the queue, so when a crowd of N joins at once (a
// flash sale's first second) N listings of up to N names cost time and
// memory quadratic in the crowd, in the client and in the server.
//
// One listing can serve many waiters of one Client. ZooKeeper answers a
// session's requests in the order they were sent, and a client sees a watch
// event before any reply that reflects the change, so a listing sent after a
// waiter created its node, or after the event that woke it, shows the node
// and the change. A listing already on the wire when a waiter asks gives no
// such promise. So a Client keeps, per queue, at most one listing in flight
// and collects the waiters that ask meanwhile into the next one, sent when
// the first returns: a waiter never joins a listing sent before it asked. A
// burst of N joiners costs a few listings, one per round trip, instead of N.
//
// The names a shared listing returns are read by many waiters: nobody may
// change them (decide, for the mutex, only reads; other rules sort a copy).

// listing is one getChildren of a queue, shared by the waiters that joined it
// before it was sent.
type listing struct {
	done     chan struct{} // closed when kids and err are set
	kids     []string      // read-only
	err      error
	waiters  int       // how many asked for it
	headOnce sync.Once // the first waiter to read it records its head (handoff.go)
}

// queueListings is the state of one queue's listings.
type queueListings struct {
	next *listing // the waiters for the listing after the one in flight; nil: none yet
}

// sharedChildren lists the children of dir: the result of a listing sent
// after this call began, shared with the other waiters of this Client that
// asked meanwhile. The slice must not be changed. markers are the queue's
// (its rule's): the node first by them is recorded as having been first.
func (c *Client) sharedChildren(ctx context.Context, dir string, markers []string) ([]string, error) {
	c.listMu.Lock()
	q, inFlight := c.lists[dir]
	var l *listing
	switch {
	case !inFlight:
		l = &listing{done: make(chan struct{})}
		q = &queueListings{}
		if c.lists == nil {
			c.lists = map[string]*queueListings{}
		}
		c.lists[dir] = q
		if !c.Background(func(bg context.Context) { c.sendListings(bg, dir, q, l) }) {
			delete(c.lists, dir)
			c.listMu.Unlock()
			return nil, zk.ErrClosed
		}
	case q.next != nil:
		l = q.next
	default:
		l = &listing{done: make(chan struct{})}
		q.next = l
	}
	l.waiters++
	c.listMu.Unlock()
	select {
	case <-l.done:
		if l.err == nil {
			l.headOnce.Do(func() { c.sawHead(dir, markers, l.kids) })
		}
		return l.kids, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sendListings sends l, then the listings the waiters who came meanwhile
// formed, until none is waiting.
func (c *Client) sendListings(bg context.Context, dir string, q *queueListings, l *listing) {
	for l != nil {
		if c.beforeListing != nil {
			c.beforeListing(dir)
		}
		l.kids, l.err = c.children(bg, dir)
		c.stats.listings.Add(1)
		close(l.done)
		c.listMu.Lock()
		l, q.next = q.next, nil
		if l == nil {
			delete(c.lists, dir)
		}
		c.listMu.Unlock()
	}
}
