package zklock

import (
	"context"
	"errors"
	"path"
	"slices"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// errNodeGone: our queue node vanished while we waited (deleted by someone
// else, or with its session). Curator treats it as NoNode and retries.
var errNodeGone = errors.New("zklock: queue node vanished")

// queue is Curator's LockInternals: participants are protected
// EPHEMERAL_SEQUENTIAL nodes "_c_<uuid>-<marker><seq>" under dir, sorted by
// sequence; the rule decides who holds and whom a waiter watches.
type queue struct {
	c      *Client
	dir    string
	marker string
	rule   rule
}

// rule is Curator's LockInternalsDriver: how to sort, who holds.
type rule struct {
	// markers: the sort key is the text after the last of these (Curator's
	// fixForSorting applied for each).
	markers []string
	// holds reports, for our node at index i of the sorted children, whether
	// it holds, and otherwise the child to watch.
	holds func(kids []string, i int) (bool, string)
	// exclusive marks the standard rule with one lease (a mutex), which
	// decide settles in one pass without sorting.
	exclusive bool
}

// standardRule is StandardLockInternalsDriver: the first maxLeases hold, each
// other node watches the one maxLeases places ahead (its predecessor, for a
// mutex).
func standardRule(marker string, maxLeases int) rule {
	return rule{
		markers: []string{marker},
		holds: func(kids []string, i int) (bool, string) {
			if i < maxLeases {
				return true, ""
			}
			return false, kids[i-maxLeases]
		},
		exclusive: maxLeases == 1,
	}
}

// decide finds our node among the (unsorted) children and applies the rule:
// whether it holds, whether it is first (no node ahead of it), and otherwise
// which child to watch. It may sort kids in place.
func (r rule) decide(kids []string, name string) (found, holds, first bool, watch string) {
	if r.exclusive {
		// The mutex needs only the nodes ahead of ours and the nearest of
		// them: one pass, in the order the sort would give.
		if !slices.Contains(kids, name) {
			return false, false, false, ""
		}
		key := sequenceKey(name, r.markers...)
		var prevKey string
		for _, k := range kids {
			if k == name {
				continue
			}
			if kk := sequenceKey(k, r.markers...); kk < key && (watch == "" || kk >= prevKey) {
				watch, prevKey = k, kk
			}
		}
		return true, watch == "", watch == "", watch
	}
	sortNodes(kids, r.markers...)
	i := slices.Index(kids, name)
	if i < 0 {
		return false, false, false, ""
	}
	holds, watch = r.holds(kids, i)
	return true, holds, i == 0, watch
}

func (r rule) sort(kids []string) { sortNodes(kids, r.markers...) }

// joinHooks let the caller of enter take part in a join; the zero value
// takes none.
type joinHooks struct {
	// created is told of every node created, before it waits.
	created func(node string)
	// ownWatch gives the data watch on our own node that a waiter sets (see
	// await) from a read of the node the caller makes anyway: ok false means
	// it has none, and await reads the node itself.
	ownWatch func(ctx context.Context, node string) (ch <-chan zk.Event, ok bool, err error)
}

// enter creates our node and, if wait, waits until it holds; hooks.created,
// if set, is told of every node it creates, before it waits. Without wait it
// returns ErrLocked when it does not hold at once. On any failure our node is
// deleted. It retries with a new node when the session was lost meanwhile,
// as long as ctx and the retry policy allow.
func (q *queue) enter(ctx context.Context, data []byte, wait bool, hooks joinHooks) (string, *zk.Session, error) {
	for n := 0; ; n++ {
		s, err := q.c.Session(ctx)
		if err != nil {
			return "", nil, err
		}
		node, err := q.c.CreateProtected(ctx, s, q.dir, q.marker, data)
		if err == nil {
			if hooks.created != nil {
				hooks.created(node)
			}
			err = q.await(ctx, s, node, q.c.track(s, node), wait, hooks.ownWatch)
			if err == nil {
				return node, s, nil // the holder untracks it when it deletes it
			}
			// Giving up: our node must not stay in the queue. Connection
			// trouble is handled by the delete itself, in the background.
			if derr := q.c.DeleteNode(node, s); derr != nil {
				q.c.Logger().Warn("could not delete an abandoned queue node", "node", node, "err", derr)
			}
			q.c.untrack(s, node)
		}
		if !errors.Is(err, zk.ErrSessionLost) && !errors.Is(err, errNodeGone) {
			return "", nil, err
		}
		if berr := q.c.Backoff(ctx, n); berr != nil {
			return "", nil, err
		}
	}
}

// await loops until node holds: list, sort, find our place, watch the node
// ahead of us with a data watch (getData, not exists: exists would leave a
// watch behind on a node that is already gone), repeat when it changes. own
// is our node's entry in the session's table: await marks it first when it
// holds with no node ahead.
//
// When the watched node is deleted, the rule is first asked again on what is
// left of the last listing (see handoff.go): nodes ahead of ours can only go
// away, since a new node always gets a higher sequence number and queues
// behind us. Without the deleted node and, if it had been first, without the
// nodes ahead of it, the rule often holds already (always for a mutex whose
// predecessor was the holder, or was the only node ahead): the lock is then
// ours without listing the children again, a round trip saved on the
// hand-off. Otherwise the listing is stale and is made again.
func (q *queue) await(ctx context.Context, s *zk.Session, node string, own *localNode, wait bool,
	ownWatch func(context.Context, string) (<-chan zk.Event, bool, error)) error {
	name := path.Base(node)
	var ownGone <-chan zk.Event // a data watch on our own node, once we wait
	for {
		kids, err := q.c.sharedChildren(ctx, q.dir, q.rule.markers)
		if err != nil {
			return err
		}
		if !q.rule.exclusive {
			kids = slices.Clone(kids) // the rule sorts it; the listing is shared
		}
		found, holds, first, watch := q.rule.decide(kids, name)
		switch {
		case !found:
			select {
			case <-s.Done():
				return zk.ErrSessionLost
			default:
				return errNodeGone
			}
		case holds:
			own.first.Store(first)
			return nil
		case !wait:
			return ErrLocked
		}
		watched := path.Join(q.dir, watch)
		ahead := q.c.local(s, watched) // nil unless this session created it
		// A mutex waiter keeps of its listing only how many nodes were ahead
		// of the one it watches: that settles the shortcut below as the whole
		// listing would, and a thousand waiters each keeping a listing of the
		// thousand would hold memory quadratic in the queue.
		beforeWatch := -1
		if q.rule.exclusive {
			beforeWatch = q.rule.countAhead(kids, watch)
			kids = nil
		}
		// A shortcut below decides without listing, so it must know that our
		// node is still there: someone may have deleted it. A watch on it,
		// set once, off the hand-off's path, tells: ZooKeeper sends one
		// connection's events in order, so its deletion, if it came first,
		// is in the channel when the watched node's is. It costs a read, so a
		// mutex waiter sets it only where a shortcut can follow (its
		// predecessor is first, or is ours and may become first), unless the
		// caller's own early read gives it for free.
		if ownGone == nil && (ownWatch != nil || !q.rule.exclusive || beforeWatch == 0 || ahead != nil) {
			if ownGone, err = q.watchOwn(ctx, node, ownWatch); err != nil {
				return err
			}
		}
		ev, err := q.watch(ctx, s, watched)
		if err != nil {
			return err
		}
		if ev.Type != zk.EventNodeDeleted {
			continue
		}
		if ownGone == nil {
			continue // no watch on our node: only a listing can say we hold
		}
		select {
		case <-ownGone: // deleted or changed: the listing decides
			ownGone = nil
			continue
		default:
		}
		if ahead == nil {
			ahead = q.c.local(s, watched) // it may have been tracked after our listing
		}
		wasFirst := ahead != nil && ahead.first.Load() || q.c.seenFirst(q.dir, q.rule.markers, watch)
		if beforeWatch >= 0 {
			// The watched node was our predecessor: with it gone we are
			// first if nothing was ahead of it, or if it had been first.
			if beforeWatch == 0 || wasFirst {
				q.c.stats.shortcuts.Add(1)
				own.first.Store(true)
				return nil
			}
			continue
		}
		rest := q.rule.remaining(kids, watch, wasFirst)
		if _, holds, first, _ := q.rule.decide(rest, name); holds {
			q.c.stats.shortcuts.Add(1)
			own.first.Store(first)
			return nil
		}
	}
}

// watchOwn sets a data watch on our own node, or takes the one that given
// sets; errNodeGone if the node is gone.
func (q *queue) watchOwn(ctx context.Context, node string, given func(context.Context, string) (<-chan zk.Event, bool, error)) (<-chan zk.Event, error) {
	var ch <-chan zk.Event
	ok, err := false, error(nil)
	if given != nil {
		ch, ok, err = given(ctx, node)
	}
	if !ok {
		ch, err = q.getW(ctx, node)
	}
	if errors.Is(err, zk.ErrNoNode) {
		return nil, errNodeGone
	}
	return ch, err
}

// getW sets a data watch on p, retried through connection loss.
func (q *queue) getW(ctx context.Context, p string) (<-chan zk.Event, error) {
	var ch <-chan zk.Event
	err := q.c.Retry(ctx, func() (err error) {
		_, _, ch, err = q.c.GetW(ctx, p)
		return err
	})
	return ch, err
}

// watch sets a data watch on p and waits for it to fire. A node already gone
// yields a synthetic event that is not a deletion, so that the caller lists
// the queue again.
func (q *queue) watch(ctx context.Context, s *zk.Session, p string) (zk.Event, error) {
	ch, err := q.getW(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return zk.Event{Type: zk.EventNotWatching, Path: p}, nil
	}
	if err != nil {
		return zk.Event{}, err
	}
	q.c.stats.watches.Add(1)
	select {
	case ev := <-ch:
		q.c.stats.wakeups.Add(1)
		return ev, nil
	case <-s.Done():
		return zk.Event{}, zk.ErrSessionLost
	case <-ctx.Done():
		return zk.Event{}, ctx.Err()
	}
}

// participants lists the queue's node paths in order, holders first.
func (q *queue) participants(ctx context.Context) ([]string, error) {
	kids, err := q.c.children(ctx, q.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	q.rule.sort(kids)
	for i, k := range kids {
		kids[i] = path.Join(q.dir, k)
	}
	return kids, nil
}

// children lists a queue's nodes, retried through connection loss.
func (c *Client) children(ctx context.Context, dir string) ([]string, error) {
	var kids []string
	err := c.Retry(ctx, func() (err error) {
		kids, err = c.Children(ctx, dir)
		return err
	})
	return kids, err
}
