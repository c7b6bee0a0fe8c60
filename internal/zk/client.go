// Package zk is the shop's ZooKeeper client, on go-zookeeper (the only
// package of the module that imports it): the connection and its states as
// Curator names them, sessions (and what to do when the server resumes one
// the client gave up: resume.go), Curator's retry policy, and the
// operations the recipes of internal/zklock are built from, each taking a
// context first.
package zk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// Sentinel errors of the client.
var (
	// ErrClosed is returned by calls on a closed Client.
	ErrClosed = errors.New("zk: client closed")
	// ErrSessionLost is returned when the ZooKeeper session ended, or the
	// connection stayed down past the session timeout, during a call.
	ErrSessionLost = errors.New("zk: session lost")
)

// State is the connection state a Client reports to its listeners; the
// names are Curator's ConnectionState values.
type State int

// Connection states.
const (
	// StateConnected: the first session is established.
	StateConnected State = iota + 1
	// StateSuspended: the connection dropped; the session may still be alive.
	StateSuspended
	// StateReconnected: a connection is back, with the old session or a new one.
	StateReconnected
	// StateLost: the session expired, or the connection stayed down past the
	// session timeout. Ephemeral nodes of that session are (or will be) gone.
	StateLost
)

func (s State) String() string {
	switch s {
	case StateConnected:
		return "connected"
	case StateSuspended:
		return "suspended"
	case StateReconnected:
		return "reconnected"
	case StateLost:
		return "lost"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// The defaults of Options: the seckill seed's Curator settings.
const (
	DefaultSessionTimeout    = 25 * time.Second
	DefaultConnectionTimeout = 20 * time.Second
	DefaultRetryBaseSleep    = time.Second
	DefaultRetryMaxRetries   = 10
)

// Options configure a Client. Zero fields get the defaults above.
type Options struct {
	// SessionTimeout is the ZooKeeper session timeout. Default
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// ConnectionTimeout bounds Connect's wait for the first session.
	// Default DefaultConnectionTimeout.
	ConnectionTimeout time.Duration
	// Retry is the policy for operations failing with connection loss.
	// Default ExponentialBackoffRetry{BaseSleep: DefaultRetryBaseSleep,
	// MaxRetries: DefaultRetryMaxRetries}.
	Retry ExponentialBackoffRetry
	// Logger receives connection state changes. Default: discard.
	Logger *slog.Logger
	// Dial opens each connection to a server, within timeout. Default
	// net.DialTimeout; set it to go through a proxy or to wrap connections.
	Dial func(network, address string, timeout time.Duration) (net.Conn, error)
	// Digest, "user:password", makes the session authenticate as that
	// digest identity (again on every reconnect), and every node the client
	// creates gets an ACL that lets that identity do anything and anyone
	// else only read (Curator's authorization plus an ACLProvider). Empty:
	// no authentication, and nodes open to anyone.
	Digest string
}

func (o *Options) setDefaults() {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.ConnectionTimeout <= 0 {
		o.ConnectionTimeout = DefaultConnectionTimeout
	}
	if o.Retry.BaseSleep <= 0 {
		o.Retry.BaseSleep = DefaultRetryBaseSleep
	}
	if o.Retry.MaxRetries <= 0 {
		o.Retry.MaxRetries = DefaultRetryMaxRetries
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Dial == nil {
		o.Dial = net.DialTimeout
	}
}

// Client is a ZooKeeper connection with Curator's connection-state model.
// It is safe for concurrent use. Close it to end its session and its
// Background goroutines.
type Client struct {
	conn *gozk.Conn
	opts Options
	log  *slog.Logger

	mu            sync.Mutex
	session       *Session // current session; nil before the first and after loss until the next
	lostSession   *Session // the session last lost, until the next one begins (resume.go)
	ready         chan struct{}
	suspended     bool
	suspendedAt   time.Time
	connectedOnce bool
	lost          atomic.Bool // a session was lost and no new one is made yet (SessionLost)
	lostTimer     *time.Timer
	listeners     Listeners[State]
	closed        bool

	events  chan struct{} // signals that pending has events
	pending []gozk.Event
	bg      context.Context // ends at Close; background work runs under it
	stopBG  context.CancelFunc
	wg      sync.WaitGroup // the event loop and background deletes

	noContainers bool // the server does not know CONTAINER nodes (before 3.5)

	acl []gozk.ACL // of every node the client creates
}

// aclFor is the ACL of the nodes created by a client with digest ("" : open
// to anyone), and an error if digest is not user:password.
func aclFor(digest string) ([]gozk.ACL, error) {
	if digest == "" {
		return gozk.WorldACL(gozk.PermAll), nil
	}
	user, password, ok := strings.Cut(digest, ":")
	if !ok || user == "" || password == "" {
		return nil, errors.New("zk: the digest identity must be user:password") // never the value: it holds a secret
	}
	return append(gozk.DigestACL(gozk.PermAll, user, password), gozk.WorldACL(gozk.PermRead)...), nil
}

// ACL is the ACL of the nodes the client creates.
func (c *Client) ACL() []gozk.ACL { return c.acl }

// Connect dials the ensemble and waits, at most ctx's deadline or
// Options.ConnectionTimeout, for the first session.
func Connect(ctx context.Context, servers []string, opts Options) (*Client, error) {
	opts.setDefaults()
	if len(servers) == 0 {
		return nil, errors.New("zk: no servers")
	}
	acl, err := aclFor(opts.Digest)
	if err != nil {
		return nil, err
	}
	c := &Client{
		opts:   opts,
		log:    opts.Logger,
		ready:  make(chan struct{}),
		events: make(chan struct{}, 1),
		acl:    acl,
	}
	c.bg, c.stopBG = context.WithCancel(context.Background())
	conn, _, err := gozk.Connect(servers, opts.SessionTimeout,
		gozk.WithEventCallback(c.onEvent),
		gozk.WithLogger(zkLogger{c.log}),
		gozk.WithLogInfo(false),
		gozk.WithDialer(func(network, address string, _ time.Duration) (net.Conn, error) {
			return opts.Dial(network, address, min(opts.ConnectionTimeout, 5*time.Second))
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("zk: connect: %w", err)
	}
	c.conn = conn
	c.wg.Add(1)
	go c.eventLoop()

	ctx, cancel := context.WithTimeout(ctx, opts.ConnectionTimeout)
	defer cancel()
	if _, err := c.Session(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("zk: connect to %v: no session within %v: %w", servers, opts.ConnectionTimeout, err)
	}
	if opts.Digest != "" {
		// go-zookeeper keeps the credentials and sends them again on every
		// reconnect, before any other request.
		if _, err := call(ctx, func() (struct{}, error) { return struct{}{}, conn.AddAuth("digest", []byte(opts.Digest)) }, nil); err != nil {
			c.Close()
			return nil, fmt.Errorf("zk: authenticate as the digest identity: %w", err)
		}
	}
	return c, nil
}

// Conn returns the underlying go-zookeeper connection, for operations the
// recipes do not cover. Do not close it; close the Client.
func (c *Client) Conn() *gozk.Conn { return c.conn }

// Session returns the current live session, waiting for one while the
// connection is down.
func (c *Client) Session(ctx context.Context) (*Session, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		s, ready := c.session, c.ready
		if s != nil && !c.suspended {
			c.mu.Unlock()
			return s, nil
		}
		c.mu.Unlock()
		select {
		case <-ready:
		case <-c.bg.Done():
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// SessionLost reports whether the client has no session now, having had
// one: it expired, or the connection stayed down for a whole session
// timeout, and no new one has been made yet. A Session call then waits for
// a reconnection that a partition may put off for good.
func (c *Client) SessionLost() bool { return c.lost.Load() }

// Listen registers fn to be called, in order and from one goroutine, with
// every state change. fn must not block for long. The returned function
// removes the listener.
func (c *Client) Listen(fn func(State)) (remove func()) {
	return c.listeners.Add(fn)
}

// Close ends the session (ZooKeeper deletes its ephemeral nodes), stops the
// Background goroutines and waits for them. It is safe to call more than once.
func (c *Client) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.stopBG()
	if c.lostTimer != nil {
		c.lostTimer.Stop()
	}
	s := c.session
	c.mu.Unlock()
	if s != nil {
		s.end()
	}
	c.conn.Close()
	c.wg.Wait()
}

// onEvent is go-zookeeper's event callback. It runs on the connection's own
// goroutines, sometimes under its locks, so it only queues the event.
func (c *Client) onEvent(ev gozk.Event) {
	if ev.Type != gozk.EventSession {
		return
	}
	c.mu.Lock()
	c.pending = append(c.pending, ev)
	c.mu.Unlock()
	select {
	case c.events <- struct{}{}:
	default:
	}
}

func (c *Client) eventLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.bg.Done():
			return
		case <-c.events:
		}
		c.mu.Lock()
		evs := c.pending
		c.pending = nil
		c.mu.Unlock()
		for _, ev := range evs {
			c.handle(ev.State)
		}
	}
}

// handle turns go-zookeeper's session events into Curator's states.
func (c *Client) handle(zs gozk.State) {
	var changed []State
	var left leftovers // of a lost session the server kept (resume.go)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	switch zs {
	case gozk.StateHasSession:
		id := c.conn.SessionID()
		first := !c.connectedOnce
		c.connectedOnce = true
		if c.session != nil && c.session.id != id {
			changed = append(changed, c.loseLocked())
		}
		if c.lostTimer != nil {
			c.lostTimer.Stop()
			c.lostTimer = nil
		}
		if c.session == nil {
			c.session = newSession(id)
			c.lost.Store(false)
			if c.lostSession != nil && c.lostSession.id == id {
				// The server kept the session we gave up: its leftovers
				// become the new Session's before anyone can see it.
				left = c.lostSession.handOver(c.session)
			}
			c.lostSession = nil
		} else {
			c.session.resume()
		}
		wasSuspended := c.suspended
		c.suspended = false
		close(c.ready)
		c.ready = make(chan struct{})
		switch {
		case first:
			changed = append(changed, StateConnected)
		case wasSuspended || len(changed) > 0:
			changed = append(changed, StateReconnected)
		}
	case gozk.StateDisconnected:
		if c.session != nil && !c.suspended {
			c.suspended, c.suspendedAt = true, time.Now()
			c.session.interrupt()
			changed = append(changed, StateSuspended)
			// Curator's rule: a connection down for a whole session timeout
			// means the session is lost, whatever the server says later.
			c.lostTimer = time.AfterFunc(c.opts.SessionTimeout, c.suspendedTooLong)
		}
	case gozk.StateExpired:
		if c.session != nil {
			changed = append(changed, c.loseLocked())
		}
	case stateDownTooLong:
		// A timer of an earlier suspension may fire late: check the time.
		if c.suspended && c.session != nil && time.Since(c.suspendedAt) >= c.opts.SessionTimeout {
			c.log.Warn("zookeeper connection down for a whole session timeout: session treated as lost")
			changed = append(changed, c.loseLocked())
		}
	}
	next := c.session
	c.mu.Unlock()
	c.sweep(left, next)
	ls := c.listeners.Snapshot()
	for _, st := range changed {
		c.log.Info("zookeeper connection state", "state", st.String())
		for _, fn := range ls {
			fn(st)
		}
	}
}

// loseLocked ends the current session. c.mu must be held.
func (c *Client) loseLocked() State {
	c.lost.Store(true)
	c.session.end()
	c.lostSession, c.session = c.session, nil
	return StateLost
}

// stateDownTooLong is our own event: the connection stayed down for a whole
// session timeout. It goes through the event queue so that listeners hear
// every change in order, from one goroutine.
const stateDownTooLong gozk.State = -1000

func (c *Client) suspendedTooLong() {
	c.onEvent(gozk.Event{Type: gozk.EventSession, State: stateDownTooLong})
}
