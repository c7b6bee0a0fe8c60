package zklock

import (
	"slices"
	"sync/atomic"
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
// left of that listing. A waiter can know whether a node had been first only
// if its own process created it; Session keeps that knowledge for the nodes
// of its queues. Nodes of other processes, Java Curator's among them, are
// handled as Curator handles them: the waiter lists again.

// localNode is a queue node created in this session, known from its create
// until its owner has deleted it. Waiters keep a pointer to the one they
// watch, so what it says outlives its removal from the session's table.
type localNode struct {
	// first is set when the node holds with no node ahead of it.
	first atomic.Bool
}

// track records a queue node created in s.
func (s *Session) track(node string) *localNode {
	n := &localNode{}
	s.nodesMu.Lock()
	defer s.nodesMu.Unlock()
	if s.nodes == nil {
		s.nodes = make(map[string]*localNode)
	}
	s.nodes[node] = n
	return n
}

// untrack forgets a node once its owner has deleted it (or given up on it).
func (s *Session) untrack(node string) {
	s.nodesMu.Lock()
	defer s.nodesMu.Unlock()
	delete(s.nodes, node)
}

// local returns what s knows of node, or nil when s did not create it (or
// its owner has deleted it since).
func (s *Session) local(node string) *localNode {
	s.nodesMu.Lock()
	defer s.nodesMu.Unlock()
	return s.nodes[node]
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
