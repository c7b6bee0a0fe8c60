package zklock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// hold is one held lock node, a Mutex's or a semaphore's lease: everything a
// held lock has from its acquisition to its release. Loss follows one rule
// for every recipe (doc.go): a hold is lost when the connection is
// suspended, the session is lost, the client is closed, or its node is
// deleted by anyone but its release.
type hold struct {
	c           *Client
	node        string
	sess        *zk.Session
	interrupted <-chan struct{} // the session's next suspension
	lost        chan struct{}   // closed when the hold is lost
	stop        chan struct{}   // closed by end: the watcher exits, and the hold is not lost
	token       *fenceToken     // the node's create zxid, once read
	onRevoke    func()          // called when the node's data asks for revocation
	arm         func()          // starts the watcher, once
	since       time.Time       // when the hold began
	// early, if set, gives the watcher the data watch that an early read of
	// the node set (FetchTokenEarly), and the token with it: its first
	// round then reads nothing. ok false: there is none, and it reads.
	early func() (ch <-chan zk.Event, ok bool)
}

// newHold starts the hold of node, created in session s. The hold is
// watched (a goroutine, and a data watch on the node: one read, or the
// watch of an early read, see hold.early) only once
// somebody asks (Lost, Token) or must be told (onRevoke): a goroutine and a
// read per hold are not free. Losses that happened before are reported all
// the same.
func newHold(c *Client, node string, s *zk.Session, onRevoke func()) *hold {
	h := &hold{c: c, node: node, sess: s, interrupted: s.Interruption(), lost: make(chan struct{}),
		stop: make(chan struct{}), token: newFenceToken(), onRevoke: onRevoke, since: time.Now()}
	h.arm = sync.OnceFunc(func() { c.Background(h.watch) })
	if onRevoke != nil {
		h.arm()
	}
	return h
}

// Lost is closed when the hold can no longer be trusted (see hold).
func (h *hold) Lost() <-chan struct{} {
	h.arm()
	return h.lost
}

// Token waits for the hold's fencing token: ErrLost if the hold ended
// before it was known.
func (h *hold) Token(ctx context.Context) (int64, error) {
	h.arm()
	return h.token.wait(ctx, h.lost)
}

// end releases the hold: the watcher stops without reporting a loss, and
// the node is deleted (Client.release: in the background if ctx ends
// first).
func (h *hold) end(ctx context.Context) error {
	close(h.stop)
	err := h.c.Release(ctx, h.node, h.sess)
	h.c.untrack(h.sess, h.node)
	return err
}

// ended is end for a hold whose node its owner has deleted already (with
// another write, in one request): the watcher stops without reporting a
// loss.
func (h *hold) ended() {
	close(h.stop)
	h.c.untrack(h.sess, h.node)
}

// fenceToken is a hold's fencing token, set once: by the hold's watcher, or
// by an early read.
type fenceToken struct {
	once  sync.Once
	ready chan struct{}
	v     int64
}

func newFenceToken() *fenceToken { return &fenceToken{ready: make(chan struct{})} }

func (t *fenceToken) set(v int64) {
	t.once.Do(func() {
		t.v = v
		close(t.ready)
	})
}

// wait returns the token once it is known; ErrLost if the hold ends first.
func (t *fenceToken) wait(ctx context.Context, lost <-chan struct{}) (int64, error) {
	select {
	case <-t.ready:
		return t.v, nil
	case <-lost:
		select {
		case <-t.ready: // known before the loss: still a valid fence
			return t.v, nil
		default:
			return 0, ErrLost
		}
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// watch follows the hold and closes lost when it ends without end:
// connection suspended, session lost, client closed, or node deleted. It
// reads the token, and calls onRevoke when the node's data asks for
// revocation.
func (h *hold) watch(bg context.Context) {
	defer func() {
		select {
		case <-h.stop: // released: not lost
		default:
			close(h.lost)
		}
	}()
	early := h.early
	for {
		var ch <-chan zk.Event
		if early != nil {
			if c, ok := early(); ok {
				ch = c // set before the hold began: it missed nothing
			}
			early = nil
		}
		if ch == nil {
			var err error
			if ch, err = h.read(); errors.Is(err, zk.ErrNoNode) {
				return // deleted, by Release (stop is closed) or by someone else
			}
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted {
				return
			}
			// data changed, or a lapsed watch: read and watch again
		case <-h.interrupted:
			return
		case <-h.sess.Done():
			return
		case <-h.stop:
			return
		case <-bg.Done():
			return
		}
	}
}

// read reads the node with a data watch: its token, and a revocation asked
// for in its data. The watch is nil on connection trouble (the
// interruption will say so).
func (h *hold) read() (<-chan zk.Event, error) {
	// No context of its own: a cancellable one would cost a goroutine per
	// read, on every purchase's hold; the client's Close ends the read as it
	// ends bg.
	data, stat, ch, err := h.c.GetW(context.Background(), h.node)
	if err != nil {
		return nil, err
	}
	h.token.set(stat.Czxid)
	if h.onRevoke != nil && string(data) == revokeMessage {
		select {
		case <-h.stop:
		default:
			h.onRevoke()
		}
	}
	return ch, nil
}
