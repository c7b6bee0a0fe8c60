package e2e

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP relay in front of a server that a fault test controls:
// it can stall every byte (held, not dropped, in both directions and on new
// connections too), cut every connection, and, for MySQL, hold back one
// packet a client sends until the test lets it go.
type Proxy struct {
	ln     net.Listener
	target string
	mysql  bool // parse the client's bytes as MySQL packets

	relayState // cond is also signalled when a hold changes
	hold       *Hold
	wg         sync.WaitGroup
}

// relayState is what the proxies share: a stall, a cut, the connections.
type relayState struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when the stall or the cut changes
	stalled bool
	cut     bool
	conns   []net.Conn

	jitterLo, jitterHi time.Duration // Proxy.Jitter's range; 0: none
}

// NewProxy relays 127.0.0.1:<free port> to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	return newProxy(t, target, false)
}

// NewMySQLProxy is a Proxy that reads what clients send as MySQL packets, so
// that HoldPacket can hold one of them.
func NewMySQLProxy(t testing.TB, target string) *Proxy {
	return newProxy(t, target, true)
}

func newProxy(t testing.TB, target string, mysql bool) *Proxy {
	t.Helper()
	p := &Proxy{ln: listenLoopback(t), target: target, mysql: mysql}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		p.ln.Close()
		p.Resume()
		p.mu.Lock()
		if p.hold != nil {
			p.hold.releaseLocked()
		}
		p.mu.Unlock()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the address clients dial instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			in.Close()
			continue
		}
		p.mu.Unlock()
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.relay(out, in, p.mysql)
		go p.relay(in, out, false)
	}
}

// relay copies src to dst, a chunk (or, with packets, a MySQL packet) at a
// time, waiting before each write while the proxy is stalled or the chunk
// is held.
func (p *Proxy) relay(dst, src net.Conn, packets bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	var line *delayLine // from the first delayed chunk on, every chunk goes through it, in order
	defer func() {
		if line != nil {
			line.close()
		}
	}()
	for {
		var chunk []byte
		if packets {
			pkt, err := readMySQLPacket(src)
			if err != nil {
				return
			}
			chunk = pkt
		} else {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			chunk = buf[:n]
		}
		pass, cutAfter := p.pass(chunk, packets)
		if !pass {
			return
		}
		if d := p.delay(); (d > 0 || line != nil) && !cutAfter {
			if line == nil {
				line = newDelayLine(dst)
			}
			line.send(chunk, d)
			continue
		}
		_, err := dst.Write(chunk)
		if cutAfter {
			p.Cut()
			p.Resume() // the stall only kept the answer back until the cut
			close(p.hold.cutDone)
			return
		}
		if err != nil {
			return
		}
	}
}

// pass waits while the proxy is stalled and while chunk is held; pass is
// false when the proxy was cut meanwhile, cutAfter true when the chunk is a
// held packet to be sent on before every connection is cut.
func (p *Proxy) pass(chunk []byte, packet bool) (pass, cutAfter bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if packet && p.hold != nil && !p.hold.taken && p.hold.match(chunk[4:]) {
		h := p.hold
		h.taken = true
		close(h.held)
		if h.onHold != nil {
			h.onHold()
		}
		for !h.released && !p.cut {
			p.cond.Wait()
		}
		if h.cutAfter && !p.cut {
			return true, true // past the stall that keeps the answer back
		}
	}
	for p.stalled && !p.cut {
		p.cond.Wait()
	}
	return !p.cut, false
}

// readMySQLPacket reads one packet: a 3-byte little-endian payload length,
// a sequence number, the payload.
func readMySQLPacket(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(append(hdr[:3:3], 0)))
	pkt := make([]byte, 4+n)
	copy(pkt, hdr[:])
	if _, err := io.ReadFull(r, pkt[4:]); err != nil {
		return nil, err
	}
	return pkt, nil
}

// Stall holds every byte in both directions, on open and new connections,
// until Resume. Nothing is lost: the bytes flow on after Resume.
func (r *relayState) Stall() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stalled = true
}

// Resume lets stalled bytes flow again.
func (r *relayState) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stalled = false
	r.cond.Broadcast()
}

// Cut closes every relayed connection and refuses new ones until Restore.
func (r *relayState) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.cond.Broadcast()
}

// wait blocks while stalled; false when cut meanwhile.
func (r *relayState) wait() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.stalled && !r.cut {
		r.cond.Wait()
	}
	return !r.cut
}

// Restore accepts connections again after Cut.
func (r *relayState) Restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = false
}

// Hold is one client packet held back by a MySQL proxy.
type Hold struct {
	p        *Proxy
	match    func(payload []byte) bool
	onHold   func()
	held     chan struct{}
	taken    bool
	released bool
	cutAfter bool
	cutDone  chan struct{} // closed once ReleaseAndCut has cut
}

// Held is closed when the packet has arrived and is being held.
func (h *Hold) Held() <-chan struct{} { return h.held }

// Release sends the held packet on (or lets it pass, if it has not come yet).
func (h *Hold) Release() {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	h.releaseLocked()
}

// ReleaseAndCut sends the held packet on and then cuts every connection
// before the server's answer can come back: the server acts on the packet,
// the client never hears how it went (a COMMIT whose outcome is unknown).
// It returns once the connections are cut; call Restore to accept new ones.
// The packet must be held already (see Held).
func (h *Hold) ReleaseAndCut() {
	h.p.mu.Lock()
	h.p.stalled = true // the answer stays behind until the cut
	h.cutAfter = true
	h.releaseLocked()
	h.p.mu.Unlock()
	<-h.cutDone
}

func (h *Hold) releaseLocked() {
	h.released = true
	h.p.cond.Broadcast()
}

// HoldPacket holds the first packet a client sends whose payload matches,
// on whichever connection it comes, until Release; onHold (if not nil) runs
// the moment it arrives, before anything else passes. Only a MySQL proxy
// sees packets.
func (p *Proxy) HoldPacket(match func(payload []byte) bool, onHold func()) *Hold {
	h := &Hold{p: p, match: match, onHold: onHold, held: make(chan struct{}), cutDone: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = h
	return h
}

// listenLoopback listens on a free loopback port.
func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
