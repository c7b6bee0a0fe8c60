package zklock_test

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A data race in go-zookeeper v1.0.4, the latest release: on every
// reconnect, Conn.sendSetWatches reads Conn.lastZxid (to re-register the
// watches) while the new receive loop already writes it for the answers to
// requests queued during the outage; nothing orders the two
// (samuel/go-zookeeper#178 and #260, go-zookeeper/zk#35, unmerged). It is
// harmless to the recipes, since ZooKeeper reports a deleted node whatever
// zxid the re-registration carries, but under -race it fails whichever test
// drops a connection while watches are set, now and then.
//
// The tests that cut connections therefore dial through a gate. On every
// connection after the first, once the handshake is through, the server's
// answers are held back until the client has written its set-watches
// request: the library reads lastZxid before it queues that request, so the
// write, our channel and the receive loop's next read order the read before
// every later write of lastZxid. With no watches to re-register the library
// reads nothing, sends nothing, and the gate opens after gateTimeout.

// gateTimeout bounds the wait for a set-watches request that is not coming.
const gateTimeout = time.Second

// opSetWatches is ZooKeeper's opcode of the set-watches request.
const opSetWatches = 101

// reconnectGate dials connections, gating all but the first.
type reconnectGate struct{ dials atomic.Int32 }

func (g *reconnectGate) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout(network, address, timeout)
	if err != nil || g.dials.Add(1) == 1 {
		return conn, err // the first connection has no watches to re-register
	}
	return &gatedConn{Conn: conn, open: make(chan struct{}), closed: make(chan struct{})}, nil
}

// gatedConn passes the connect handshake through, then holds reads back
// until a set-watches request has been written or gateTimeout has passed.
type gatedConn struct {
	net.Conn
	openOnce, closeOnce sync.Once
	open, closed        chan struct{}

	// Read by the handshake only (one goroutine, before the receive loop).
	head      [4]byte // the connect response's length prefix
	headRead  int
	bodyLeft  int
	handshake bool // done: the connect response has been read whole
	gated     atomic.Bool
}

func (c *gatedConn) Read(b []byte) (int, error) {
	if c.gated.Load() {
		select {
		case <-c.open:
		case <-c.closed:
		}
		return c.Conn.Read(b)
	}
	n, err := c.Conn.Read(b)
	c.countHandshake(b[:n])
	return n, err
}

// countHandshake follows the connect response (a length-prefixed packet)
// and starts gating once it has been read whole. The library reads it with
// exactly sized buffers, so no read goes past it.
func (c *gatedConn) countHandshake(b []byte) {
	for len(b) > 0 && !c.handshake {
		if c.headRead < len(c.head) {
			k := copy(c.head[c.headRead:], b)
			c.headRead += k
			b = b[k:]
			if c.headRead == len(c.head) {
				c.bodyLeft = int(binary.BigEndian.Uint32(c.head[:]))
			}
			continue
		}
		k := min(len(b), c.bodyLeft)
		c.bodyLeft -= k
		b = b[k:]
		if c.bodyLeft == 0 {
			c.handshake = true
			c.gated.Store(true)
			time.AfterFunc(gateTimeout, c.release)
		}
	}
}

// Write opens the gate on a set-watches request: a length prefix, the xid
// and the opcode, each 4 bytes big-endian, in one write. Only requests after
// the handshake count (the connect request has other fields there).
func (c *gatedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if c.gated.Load() && len(b) >= 12 && int32(binary.BigEndian.Uint32(b[8:12])) == opSetWatches {
		c.release()
	}
	return n, err
}

func (c *gatedConn) release() { c.openOnce.Do(func() { close(c.open) }) }

func (c *gatedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
