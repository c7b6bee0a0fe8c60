package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
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

	opts mutexOptions

	mu       sync.Mutex
	count    int
	hold     *hold  // nil when nothing is held
	onRevoke func() // set by MakeRevocable
	early    bool   // FetchTokenEarly: read the token as soon as the node exists
}

// mutexOptions are what the recipes built on a Mutex give it at
// construction.
type mutexOptions struct {
	data      []byte       // node data; nil: the client's NodeData
	forbidden func() error // checked before acquiring (the read/write lock's no-upgrade rule)
	queued    func()       // told when our node is in the queue, before it waits
}

// NewMutex returns a handle on the lock at lockPath. It does no I/O; the path
// and its parents are created as containers on first use.
func NewMutex(c *Client, lockPath string) *Mutex {
	return newMutex(c, lockPath, lockMarker, standardRule(lockMarker, 1), mutexOptions{})
}

func newMutex(c *Client, dir, marker string, r rule, opts mutexOptions) *Mutex {
	return &Mutex{c: c, q: queue{c: c, dir: dir, marker: marker, rule: r}, pathErr: zk.ValidatePath(dir), opts: opts}
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
	data, onRevoke := m.opts.data, m.onRevoke
	m.mu.Unlock()
	start := time.Now()
	if m.opts.forbidden != nil {
		if err := m.opts.forbidden(); err != nil {
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
			if !m.c.Background(func(context.Context) { pre.fetch(m.c, node, r) }) {
				r.err = zk.ErrClosed
				close(r.done)
			}
		}
		hooks.ownWatch = pre.watch
	}
	m.mu.Unlock()
	if queued := m.opts.queued; queued != nil {
		early := hooks.created
		hooks.created = func(node string) {
			queued()
			if early != nil {
				early(node)
			}
		}
	}
	node, s, err := m.q.enter(ctx, data, wait, hooks)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return err
		}
		return fmt.Errorf("zklock: acquire %s: %w", m.q.dir, err)
	}
	h := newHold(m.c, node, s, onRevoke)
	pre.attach(node, h.token)
	if onRevoke == nil && pre != nil {
		// The early read's data watch is the hold's: watching it costs no
		// read more (a revocable hold reads its node's data at once).
		h.early = func() (<-chan zk.Event, bool) { return pre.held(node) }
	}
	m.mu.Lock()
	m.count, m.hold = 1, h
	m.mu.Unlock()
	if o := m.c.opts.Observer; o != nil {
		o.LockAcquired(m.q.dir, h.since.Sub(start))
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
	h := m.hold
	m.hold = nil
	m.mu.Unlock()
	if o := m.c.opts.Observer; o != nil {
		o.LockReleased(m.q.dir, time.Since(h.since))
	}
	if err := h.end(ctx); err != nil {
		return fmt.Errorf("zklock: release %s: %w", m.q.dir, err)
	}
	return nil
}

// Lost returns a channel that is closed when the lock can no longer be
// trusted to be held (the rule in the package's doc: the connection was
// suspended, the session was lost, the client closed, or the lock node was
// deleted). A handle that holds nothing returns a closed channel. Work
// guarded by the lock must check it before it commits, and the holder must
// still call Release.
//
// The hold is watched (a goroutine, and a data watch on the node: one read,
// or none after FetchTokenEarly, whose read set that watch) from the first
// call of Lost or Token during it, or from the start for a revocable lock;
// holders that never ask do not pay for it. Losses that
// happened before that first call are reported all the same.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	return lostOf(h)
}

// lostOf is Lost of a handle whose hold is h (nil: none held).
func lostOf(h *hold) <-chan struct{} {
	if h == nil {
		return closedChan
	}
	return h.Lost()
}

// tokenOf is Token of a handle whose hold is h (nil: none held).
func tokenOf(ctx context.Context, h *hold) (int64, error) {
	if h == nil {
		return 0, ErrNotHeld
	}
	return h.Token(ctx)
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
	h := m.hold
	m.mu.Unlock()
	return tokenOf(ctx, h)
}

// FetchTokenEarly makes this handle read the fencing token of each of its
// acquisitions as soon as its node exists: alongside the first listing of the
// queue, and while it waits. Token then answers at once when the lock is
// held, which takes a round trip off every hand-off for holders that fence
// their work. It costs that read for every acquisition, and the hold watches
// its node with the watch that read set (Lost): a holder that fences and
// watches pays one read in all. Call it before Acquire.
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
	if m.hold == nil {
		return ""
	}
	return m.hold.node
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
	err := c.Retry(ctx, func() error {
		_, err := c.Set(ctx, nodePath, []byte(revokeMessage), -1)
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zklock: revoke %s: %w", nodePath, err)
	}
	return nil
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
	reads      map[string]*earlyRead // by node, until a waiter takes the watch
	kept       map[string]*earlyRead // by node, until the hold takes the watch
}

// earlyRead is the early read of one node.
type earlyRead struct {
	done chan struct{} // closed when answered
	ch   <-chan zk.Event
	err  error
}

// held is the data watch the early read of node set, for the hold of node
// to watch its node with (hold.watch); a waiter only looked at it (watch),
// so it is still armed when the waiter holds unless the node changed
// meanwhile. ok false when there was no early read of node or it failed;
// the channel is closed once the watch has fired, and the hold then reads
// its node again. It waits for the read's answer.
func (p *tokenPrefetch) held(node string) (ch <-chan zk.Event, ok bool) {
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	r := p.kept[node]
	p.kept = nil // the hold's node is the last this acquisition made
	p.mu.Unlock()
	if r == nil {
		return nil, false
	}
	<-r.done
	return r.ch, r.err == nil
}

// start records that node is about to be read.
func (p *tokenPrefetch) start(node string) *earlyRead {
	r := &earlyRead{done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reads == nil {
		p.reads = make(map[string]*earlyRead)
	}
	if p.kept == nil {
		p.kept = make(map[string]*earlyRead)
	}
	p.reads[node], p.kept[node] = r, r
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
	_, st, ch, err := c.GetW(context.Background(), node) // on a background goroutine already: no context of its own
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
