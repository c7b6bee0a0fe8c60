package zklock

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Hand-offs without a second listing.
//
// A waiter woken by the deletion of the node ahead of it normally lists the
// queue again, as Curator does: the deleted node may have given up while
// nodes further ahead still wait. That listing is a round trip on the
// critical path of every hand-off, and with many waiters the longest request
// the server answers.
//
// It can be skipped when the deleted node had been first in the queue (it
// held the lock with no node ahead of it). Nothing can queue ahead of a node
// once it is first: ZooKeeper gives every new node a higher sequence number.
// So when such a node is deleted, every node that was ahead of it in the
// waiter's last listing is gone too, and the rule can be applied to what is
// left of that listing. A waiter knows that a node had been first when its
// own process created it (Session keeps that knowledge for the nodes of its
// queues), or when any listing of its Client showed the node first: a
// listing is the server's snapshot of the queue, and a node first in it was
// first then. The waiters of one Client share listings and list whenever
// they join, so in a busy queue a node of another process (Java Curator's
// among them) is often seen first while it holds, and the waiter behind it
// takes the hand-off without listing. Otherwise it lists again, as Curator
// does.

// localNode is a queue node created in this session, known from its create
// until its owner has deleted it. Waiters keep a pointer to the one they
// watch, so what it says outlives its removal from the session's table.
type localNode struct {
	// first is set when the node holds with no node ahead of it.
	first atomic.Bool
}

// track records a queue node created in s. The session's table goes when
// the session does.
func (c *Client) track(s *zk.Session, node string) *localNode {
	n := &localNode{}
	c.localMu.Lock()
	defer c.localMu.Unlock()
	nodes, ok := c.locals[s]
	if !ok {
		if c.locals == nil {
			c.locals = make(map[*zk.Session]map[string]*localNode)
		}
		nodes = make(map[string]*localNode)
		c.locals[s] = nodes
		c.Background(func(bg context.Context) {
			select {
			case <-s.Done():
			case <-bg.Done():
			}
			c.localMu.Lock()
			delete(c.locals, s)
			c.localMu.Unlock()
		})
	}
	nodes[node] = n
	return n
}

// untrack forgets a node of s once its owner has deleted it (or given up on
// it).
func (c *Client) untrack(s *zk.Session, node string) {
	c.localMu.Lock()
	defer c.localMu.Unlock()
	delete(c.locals[s], node)
}

// local returns what the client knows of node, or nil when s did not create
// it (or its owner has deleted it since).
func (c *Client) local(s *zk.Session, node string) *localNode {
	c.localMu.Lock()
	defer c.localMu.Unlock()
	return c.locals[s][node]
}

// remaining is a waiter's last listing after the node it watched, gone, was
// deleted: without that node and, when gone had been first, without every
// node that sorts ahead of it, which were deleted before it could be first.
// It reuses kids.
func (r rule) remaining(kids []string, gone string, wasFirst bool) []string {
	key := sequenceKey(gone, r.markers...)
	return slices.DeleteFunc(kids, func(k string) bool {
		return k == gone || wasFirst && sequenceKey(k, r.markers...) < key
	})
}

// countAhead counts the nodes of kids that sort ahead of node.
func (r rule) countAhead(kids []string, node string) int {
	key := sequenceKey(node, r.markers...)
	n := 0
	for _, k := range kids {
		if sequenceKey(k, r.markers...) < key {
			n++
		}
	}
	return n
}

// headsKept is how many nodes seen first a Client remembers per queue, and
// headQueues for how many queues; past that it forgets them all (a waiter
// then lists again, as without them).
const (
	headsKept  = 4
	headQueues = 1024
)

// sawHead records the node first in kids, a listing of dir ordered by
// markers, as having been first. Only protected names are recorded
// ("_c_<uuid>-..."): their random UUID makes them unique also when the
// queue's parent was deleted and made again and the sequence numbers start
// over.
func (c *Client) sawHead(dir string, markers, kids []string) {
	if len(kids) == 0 {
		return
	}
	head, key := kids[0], sequenceKey(kids[0], markers...)
	for _, k := range kids[1:] {
		if kk := sequenceKey(k, markers...); kk < key {
			head, key = k, kk
		}
	}
	if !isProtected(head) {
		return
	}
	q := headsKey(dir, markers)
	c.listMu.Lock()
	defer c.listMu.Unlock()
	h := c.heads[q]
	if slices.Contains(h, head) {
		return
	}
	if c.heads == nil || h == nil && len(c.heads) >= headQueues {
		c.heads = make(map[string][]string)
	}
	if len(h) == headsKept {
		h = h[1:]
	}
	c.heads[q] = append(slices.Clip(h), head)
}

// seenFirst reports whether a listing of dir (ordered by markers) showed
// node first.
func (c *Client) seenFirst(dir string, markers []string, node string) bool {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	return slices.Contains(c.heads[headsKey(dir, markers)], node)
}

func headsKey(dir string, markers []string) string {
	return dir + "\x00" + strings.Join(markers, "\x00")
}

// isProtected reports whether name has Curator's protected prefix,
// "_c_" and a canonical UUID and "-".
func isProtected(name string) bool {
	const n = len("_c_") + 36
	if len(name) <= n || !strings.HasPrefix(name, "_c_") || name[n] != '-' {
		return false
	}
	return uuid.Validate(name[3:n]) == nil
}
