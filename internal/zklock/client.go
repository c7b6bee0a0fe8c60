package zklock

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Options configure the recipes of a Client.
type Options struct {
	// NodeData is written into lock nodes. Default: this host's IP address as
	// text, as Curator does.
	NodeData []byte
	// Observer, if set, hears what the client's locks do: for metrics,
	// without this package depending on a metrics library.
	Observer Observer
}

// Observer hears the lock events of a Client's Mutexes (and so of the
// recipes built on them). Its methods run on the acquiring and releasing
// goroutines: they must be quick and must not call back into the Client.
// Connection states are heard through the zk.Client's Listen.
type Observer interface {
	// LockAcquired: a Mutex on path was acquired after waiting (from the
	// call of Acquire to the hold; reentrant acquisitions are not reported).
	LockAcquired(path string, waited time.Duration)
	// LockReleased: a Mutex on path was let go after being held that long.
	LockReleased(path string, held time.Duration)
}

// Client is a ZooKeeper client (zk.Client, whose methods it has) with what
// the recipes keep per client: the queue listings its waiters share, the
// nodes lately seen first, the nodes its sessions created, and counters.
// Recipes take it as their first argument. Closing it closes the zk.Client.
type Client struct {
	*zk.Client
	opts  Options
	stats stats

	listMu sync.Mutex
	lists  map[string]*queueListings // the queues with a listing in flight (listing.go)
	heads  map[string][]string       // per queue, the nodes lately seen first in a listing (handoff.go)
	// beforeListing, if set (by tests), runs before each shared listing is sent.
	beforeListing func(dir string)

	localMu sync.Mutex
	locals  map[*zk.Session]map[string]*localNode // queue nodes each live session created (handoff.go)

	arrivalMu sync.Mutex
	arriving  map[string]int // per lock path, this client's ArrivalMutex participants (arrival.go)
}

// New returns the recipes' client on zc.
func New(zc *zk.Client, opts Options) *Client {
	if opts.NodeData == nil {
		opts.NodeData = []byte(localAddress())
	}
	return &Client{Client: zc, opts: opts}
}

// stats counts what the recipes do, for tests and benchmarks.
type stats struct {
	wakeups   atomic.Int64 // watch notifications that woke a waiter
	listings  atomic.Int64 // children listings of a lock queue
	shortcuts atomic.Int64 // hand-offs taken without listing again
	watches   atomic.Int64 // watches lock waiters set
}

// Stats are counters of a Client's recipes.
type Stats struct {
	// Wakeups counts watch notifications that woke a lock waiter. With a
	// fair, herd-free queue it grows by one per hand-off.
	Wakeups int64
	// Listings counts the queue listings (getChildren) of lock waiters.
	Listings int64
	// Shortcuts counts the waiters that took the lock after a hand-off
	// without listing the queue again: their predecessor was the only node
	// ahead of them, or had been first in line and was created in this
	// session, so its deletion left them first.
	Shortcuts int64
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Wakeups: c.stats.wakeups.Load(), Listings: c.stats.listings.Load(), Shortcuts: c.stats.shortcuts.Load()}
}

// localAddress is the host's first non-loopback IPv4 address, Curator's
// default lock node data; 127.0.0.1 when there is none.
func localAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return "127.0.0.1"
}
