package zk

import (
	"context"
	"sync"
)

// A session given up, then resumed.
//
// The client treats its session as lost when the connection stays down for a
// whole session timeout (Curator's rule): every recipe is told, and lets its
// nodes go without deleting them, since an ephemeral node dies with its
// session. But the server may still have the session (its clock runs from
// the last packet it heard, and a newly elected leader gives every session a
// fresh timeout), and go-zookeeper then resumes it on its next connection.
// The nodes the recipes let go would live on with it: a lock node that nobody
// holds any more, or the node of a create whose answer was lost, at the head
// of a queue whose waiters then wait as long as this process lives.
//
// So each Session keeps the names of the ephemeral nodes created in it and
// not deleted yet, and the parent and prefix of every protected create whose
// answer was lost and whose node has not been looked for yet. When a
// connection brings back the id of the session the client last lost, the
// client deletes all of them, as the new Session. Curator instead abandons
// the ZooKeeper handle and waits for the server to expire the old session;
// go-zookeeper cannot be told to drop a session, and deleting at once frees
// the queues sooner.

// protectedCreate names the node of a protected create: its parent and
// protected prefix.
type protectedCreate struct{ parent, prefix string }

// sessionNodes is what a Session created that may still exist.
type sessionNodes struct {
	mu        sync.Mutex
	owned     map[string]struct{}          // created, not deleted yet
	unsure    map[protectedCreate]struct{} // answer lost, not looked for yet
	successor *Session                     // set when swept: the session that resumed this one
}

// created records an ephemeral node created in s. If s was swept already
// (the create's answer came in after the session was lost and resumed), the
// node is deleted at once.
func (c *Client) created(s *Session, node string) {
	s.created.mu.Lock()
	next := s.created.successor
	if next == nil {
		if s.created.owned == nil {
			s.created.owned = make(map[string]struct{})
		}
		s.created.owned[node] = struct{}{}
	}
	s.created.mu.Unlock()
	if next != nil {
		c.Background(func(context.Context) { _ = c.DeleteNode(node, next) })
	}
}

// deleted forgets a node of s that is gone.
func (s *Session) deleted(node string) {
	s.created.mu.Lock()
	defer s.created.mu.Unlock()
	delete(s.created.owned, node)
}

// lookFor records a protected create of s whose answer was lost. If s was
// swept already, it records nothing and returns the session that resumed s,
// which is to look for the node instead.
func (s *Session) lookFor(pc protectedCreate) (successor *Session) {
	s.created.mu.Lock()
	defer s.created.mu.Unlock()
	if s.created.successor != nil {
		return s.created.successor
	}
	if s.created.unsure == nil {
		s.created.unsure = make(map[protectedCreate]struct{})
	}
	s.created.unsure[pc] = struct{}{}
	return nil
}

// lookedFor forgets a protected create once its node was looked for (and
// deleted, if there was one).
func (s *Session) lookedFor(pc protectedCreate) {
	s.created.mu.Lock()
	defer s.created.mu.Unlock()
	delete(s.created.unsure, pc)
}

// leftovers are the nodes a lost session may have left: those it created
// and the protected creates whose answers were lost.
type leftovers struct {
	owned  map[string]struct{}
	unsure map[protectedCreate]struct{}
}

// handOver makes next, the same ZooKeeper session resumed after the client
// had given it up, the successor of old, and returns what old left behind.
// The client calls it before next is published, so that a recipe that
// looks for a lost create's node after the resumption always finds the
// successor (lookFor) and looks as next.
func (old *Session) handOver(next *Session) leftovers {
	old.created.mu.Lock()
	defer old.created.mu.Unlock()
	old.created.successor = next
	l := leftovers{old.created.owned, old.created.unsure}
	old.created.owned, old.created.unsure = nil, nil
	return l
}

// sweep deletes, as next, what a lost session left behind (handOver).
func (c *Client) sweep(l leftovers, next *Session) {
	if len(l.owned)+len(l.unsure) == 0 {
		return
	}
	c.log.Warn("zookeeper session resumed after it was treated as lost: deleting the nodes let go with it",
		"nodes", len(l.owned), "unanswered_creates", len(l.unsure))
	c.Background(func(context.Context) {
		for node := range l.owned {
			_ = c.DeleteNode(node, next) // retried in the background itself
		}
	})
	for pc := range l.unsure {
		c.deleteProtectedOrphans(pc.parent, pc.prefix, next)
	}
}
