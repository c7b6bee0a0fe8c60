package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Sentinel errors of the lock recipes.
var (
	// ErrLocked is returned by TryAcquire when another participant holds the lock.
	ErrLocked = errors.New("zklock: locked by another participant")
	// ErrNotHeld is returned by Release on a handle that does not hold the lock.
	ErrNotHeld = errors.New("zklock: lock not held by this handle")
	// ErrLost is returned by Token when the hold ended before its token was known.
	ErrLost = errors.New("zklock: lock lost")
)

// closedChan is what Lost returns when nothing is held.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Mutex is Curator's InterProcessMutex: a fair (FIFO) distributed lock on a
// ZooKeeper path, interoperable with Java Curator on the same path.
//
// It is reentrant per handle: Acquire on a handle that holds the lock only
// counts, and the lock is released when Release has been called as often.
// Goroutines sharing one handle therefore share the lock; give each its own.
type Mutex struct {
	c *Client
	q queue

	pathErr   error      // ValidatePath of the lock path, checked once
	acquiring sync.Mutex // one acquisition at a time on this handle

	mu        sync.Mutex
	count     int
	node      string
	sess      *Session
	lost      chan struct{}
	token     *fenceToken   // the hold's fencing token, known after the watcher's first read
	stop      chan struct{} // closed by Release: the hold's watcher exits
	arm       func()        // arms the watch on the held node (once per hold)
	data      []byte        // node data; nil: the client's NodeData
	onRevoke  func()        // set by MakeRevocable
	forbidden func() error  // checked before acquiring (the read/write lock's no-upgrade rule)
	early     bool          // FetchTokenEarly: read the token as soon as the node exists
	heldSince time.Time     // when the hold began (for Options.Observer)
}

// NewMutex returns a handle on the lock at lockPath. It does no I/O; the path
// and its parents are created as containers on first use.
func NewMutex(c *Client, lockPath string) *Mutex {
	return newMutex(c, lockPath, lockMarker, standardRule(lockMarker, 1))
}

func newMutex(c *Client, dir, marker string, r rule) *Mutex {
	return &Mutex{c: c, q: queue{c: c, dir: dir, marker: marker, rule: r}, pathErr: ValidatePath(dir)}
}

// Acquire blocks until the lock is held, or ctx ends. When it gives up it
// deletes its queue node, so nothing is left behind.
func (m *Mutex) Acquire(ctx context.Context) error {
	return m.acquire(ctx, true)
}

// TryAcquire takes the lock if it is free right now and returns ErrLocked
// otherwise, leaving no node behind.
func (m *Mutex) TryAcquire(ctx context.Context) error {
	return m.acquire(ctx, false)
}

func (m *Mutex) acquire(ctx context.Context, wait bool) error {
	if m.pathErr != nil {
		return m.pathErr
	}
	m.acquiring.Lock()
	defer m.acquiring.Unlock()
	m.mu.Lock()
	if m.count > 0 {
		m.count++
		m.mu.Unlock()
		return nil
	}
	data, onRevoke, forbidden := m.data, m.onRevoke, m.forbidden
	m.mu.Unlock()
	start := time.Now()
	if forbidden != nil {
		if err := forbidden(); err != nil {
			return err
		}
	}
	switch {
	case onRevoke != nil:
		data = []byte{} // Curator writes no data into a revocable lock's node
	case data == nil:
		data = m.c.opts.NodeData
	}

	var pre *tokenPrefetch // nil unless FetchTokenEarly
	var hooks joinHooks
	m.mu.Lock()
	if m.early {
		pre = &tokenPrefetch{}
		// The early read is a data watch too: a waiter needs one on its own
		// node (queue.await), and so pays no request more for it.
		hooks.created = func(node string) {
			r := pre.start(node)
			if !m.c.background(func(context.Context) { pre.fetch(m.c, node, r) }) {
				r.err = ErrClosed
				close(r.done)
			}
		}
		hooks.ownWatch = pre.watch
	}
	m.mu.Unlock()
	node, s, err := m.q.enter(ctx, data, wait, hooks)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return err
		}
		return fmt.Errorf("zklock: acquire %s: %w", m.q.dir, err)
	}
	h := held{node: node, sess: s, interrupted: s.interruption(), lost: make(chan struct{}), stop: make(chan struct{}),
		token: newFenceToken(), onRevoke: onRevoke}
	pre.attach(node, h.token)
	// The hold is watched only once somebody asks (Lost) or must be told
	// (revocation): a goroutine and a read per hold are not free.
	arm := sync.OnceFunc(func() { m.c.background(func(bg context.Context) { m.c.watchHeld(bg, h) }) })
	if onRevoke != nil {
		arm()
	}
	now := time.Now()
	m.mu.Lock()
	m.count, m.node, m.sess, m.lost, m.token, m.stop, m.arm, m.heldSince = 1, node, s, h.lost, h.token, h.stop, arm, now
	m.mu.Unlock()
	if o := m.c.opts.Observer; o != nil {
		o.LockAcquired(m.q.dir, now.Sub(start))
	}
	return nil
}

// Release undoes one Acquire; the last one deletes the lock node (retrying in
// the background through connection loss until the node or its session is
// gone). If ctx ends first, the delete goes on in the background and Release
// returns nil: the lock is released either way. It returns ErrNotHeld when the handle does not hold the lock.
func (m *Mutex) Release(ctx context.Context) error {
	m.mu.Lock()
	if m.count == 0 {
		m.mu.Unlock()
		return ErrNotHeld
	}
	m.count--
	if m.count > 0 {
		m.mu.Unlock()
		return nil
	}
	node, s, stop, since := m.node, m.sess, m.stop, m.heldSince
	m.node, m.sess, m.lost, m.token, m.stop, m.arm = "", nil, nil, nil, nil, nil
	m.mu.Unlock()
	close(stop)
	if o := m.c.opts.Observer; o != nil {
		o.LockReleased(m.q.dir, time.Since(since))
	}
	err := m.c.release(ctx, node, s)
	s.untrack(node)
	if err != nil {
		return fmt.Errorf("zklock: release %s: %w", m.q.dir, err)
	}
	return nil
}

// Lost returns a channel that is closed when the lock can no longer be
// trusted to be held: the connection was suspended, the session was lost, the
// client closed, or the lock node was deleted. A handle that holds nothing
// returns a closed channel. Work guarded by the lock must check it before it
// commits, and the holder must still call Release.
//
// The hold is watched (a goroutine, and a data watch on the node: one read)
// from the first call of Lost during it, or from the start for a revocable
// lock; holders that never ask do not pay for it. Losses that happened before
// that first call are reported all the same.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost == nil {
		return closedChan
	}
	m.arm()
	return m.lost
}

// Token returns the fencing token of the current hold: the create zxid
// (Stat.Czxid) of the lock node. Zxids order every change of the ensemble, so
// the token strictly increases from holder to holder on a path for the
// ensemble's lifetime, also when the lock's container parent is deleted and
// made again (the node's sequence number restarts then, which is why it is not
// the token). Storage that refuses a write carrying a token lower than one it
// has seen stops a holder that kept working after its lock passed on
// (paused, partitioned, expired): see the README.
//
// The token comes from the hold's watcher (the read that Lost also starts),
// so a holder that watches Lost pays no extra request for it, or, after
// FetchTokenEarly, from a read sent as soon as the node exists; Token waits
// for whichever answers first. It returns ErrNotHeld when nothing is held and ErrLost when
// the hold ended before the read answered. For a read lock the tokens of
// readers holding at once are not ordered among themselves: fence writers.
func (m *Mutex) Token(ctx context.Context) (int64, error) {
	m.mu.Lock()
	if m.lost == nil {
		m.mu.Unlock()
		return 0, ErrNotHeld
	}
	m.arm()
	tok, lost := m.token, m.lost
	m.mu.Unlock()
	return tok.wait(ctx, lost)
}

// FetchTokenEarly makes this handle read the fencing token of each of its
// acquisitions as soon as its node exists: alongside the first listing of the
// queue, and while it waits. Token then answers at once when the lock is
// held, which takes a round trip off every hand-off for holders that fence
// their work. It costs that read for every acquisition; call it before
// Acquire.
func (m *Mutex) FetchTokenEarly() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.early = true
}

// IsHeld reports whether this handle holds the lock.
func (m *Mutex) IsHeld() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count > 0
}

// Node returns the path of the held lock node, or "" when nothing is held.
// Its sequence number orders the holders of one incarnation of the lock's
// parent only; use Token for fencing.
func (m *Mutex) Node() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node
}

// ParticipantNodes returns the paths of all nodes queued on the lock, the
// holder first, as Curator's getParticipantNodes does.
func (m *Mutex) ParticipantNodes(ctx context.Context) ([]string, error) {
	return m.q.participants(ctx)
}

// MakeRevocable makes the lock revocable, as Curator's
// InterProcessMutex.makeRevocable: while this handle holds the lock, fn is
// called (from a background goroutine) each time another participant asks for
// it with AttemptRevoke. fn would typically finish up and Release. Call it
// before Acquire; a revocable lock's node carries no data, as in Curator.
func (m *Mutex) MakeRevocable(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onRevoke = fn
}

// revokeMessage is the data Curator's Revoker writes into a lock node.
const revokeMessage = "__REVOKE__"

// AttemptRevoke asks the holder of the lock node at nodePath (one of
// ParticipantNodes) to release it, as Curator's Revoker.attemptRevoke does:
// it writes "__REVOKE__" into the node. Only a holder that called
// MakeRevocable reacts. A node that is gone already is not an error.
func AttemptRevoke(ctx context.Context, c *Client, nodePath string) error {
	err := c.retry(ctx, func() error {
		_, err := call(ctx, func() (*zk.Stat, error) { return c.conn.Set(nodePath, []byte(revokeMessage), -1) }, nil)
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zklock: revoke %s: %w", nodePath, err)
	}
	return nil
}

// held is what the watcher of one hold needs.
type held struct {
	node        string
	sess        *Session
	interrupted <-chan struct{} // the session's next suspension
	lost, stop  chan struct{}
	token       *fenceToken
	onRevoke    func()
}

// tokenPrefetch carries a token read early (FetchTokenEarly) to the hold
// whose node it belongs to: an acquisition may create several nodes (a
// session lost while waiting), and only the final one's token counts. The
// read sets a data watch on the node, which a waiter takes as the watch on
// its own node.
type tokenPrefetch struct {
	mu         sync.Mutex
	node       string // the node read, once read
	v          int64
	target     *fenceToken // the hold's token, once acquired
	targetNode string
	reads      map[string]*earlyRead // by node
}

// earlyRead is the early read of one node.
type earlyRead struct {
	done chan struct{} // closed when answered
	ch   <-chan zk.Event
	err  error
}

// start records that node is about to be read.
func (p *tokenPrefetch) start(node string) *earlyRead {
	r := &earlyRead{done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reads == nil {
		p.reads = make(map[string]*earlyRead)
	}
	p.reads[node] = r
	return r
}

// watch is joinHooks.ownWatch: the data watch the early read of node set,
// once it is answered; ok false when it has none to give. A watch fires
// once, so it is given once.
func (p *tokenPrefetch) watch(ctx context.Context, node string) (<-chan zk.Event, bool, error) {
	p.mu.Lock()
	r := p.reads[node]
	delete(p.reads, node)
	p.mu.Unlock()
	if r == nil {
		return nil, false, nil
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
	if r.err != nil && !errors.Is(r.err, zk.ErrNoNode) {
		return nil, false, nil // connection trouble: the waiter reads again itself
	}
	return r.ch, true, r.err
}

// fetch reads node's create zxid, with a data watch, and hands it on; a
// failure leaves the token to the hold's watcher.
func (p *tokenPrefetch) fetch(c *Client, node string, r *earlyRead) {
	_, st, ch, err := c.conn.GetW(node)
	r.ch, r.err = ch, err
	close(r.done)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.target != nil {
		if p.targetNode == node {
			p.target.set(st.Czxid)
		}
		return
	}
	p.node, p.v = node, st.Czxid
}

// attach gives the hold of node its token, now or when the read answers;
// a nil prefetch (no early read) leaves it to the hold's watcher.
func (p *tokenPrefetch) attach(node string, tok *fenceToken) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.node == node {
		tok.set(p.v)
		return
	}
	p.target, p.targetNode = tok, node
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

// watchHeld follows one hold and closes lost when it ends without Release:
// connection suspended, session lost, client closed, or node deleted. It calls onRevoke when the node's data asks for revocation.
func (c *Client) watchHeld(bg context.Context, h held) {
	defer func() {
		select {
		case <-h.stop: // released: not lost
		default:
			close(h.lost)
		}
	}()
	for {
		data, stat, ch, err := c.conn.GetW(h.node)
		if errors.Is(err, zk.ErrNoNode) {
			return // deleted, by Release (stop is closed) or by someone else
		}
		if err == nil && h.token != nil {
			h.token.set(stat.Czxid)
		}
		if err == nil && h.onRevoke != nil && string(data) == revokeMessage {
			select {
			case <-h.stop:
			default:
				h.onRevoke()
			}
		}
		if err != nil {
			ch = nil // connection trouble: the interruption will say so
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
