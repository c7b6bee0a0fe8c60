package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// ZooKeeper opcodes the fault rules match on (the server's OpCode values).
const (
	ZKOpCreate          int32 = 1
	ZKOpDelete          int32 = 2
	ZKOpCreate2         int32 = 15
	ZKOpCreateContainer int32 = 19
	zkOpCloseSession    int32 = -11
	ZKOpGetData         int32 = 4
	ZKOpSetData         int32 = 5
	zkOpPing            int32 = 11
	zkXidPing           int32 = -2
)

// ZKProxy is a TCP relay in front of one ZooKeeper server that reads
// ZooKeeper's framing (a 4-byte big-endian length, then the packet): it
// knows every request's xid, opcode and path, and every reply's xid. So a
// fault test can hit its path every run: cut the connection when the reply
// to a chosen request comes back (the server did it, the client never hears),
// stall every byte, or expire the session of the clients it relays, on
// demand, as another client with the same session id and password that
// closes it.
type ZKProxy struct {
	ln     net.Listener
	target string

	relayState
	sessions map[int64][]byte // session id → password, from the servers' connect responses
	faults   []*ZKFault
	wg       sync.WaitGroup
}

// ZKFault is a fault armed with ZKProxy.CutBeforeReply, HoldReply or
// NoticeReply: it strikes once, on the reply to the first request it
// matches.
type ZKFault struct {
	match   func(op int32, path string) bool
	action  faultAction
	seen    chan struct{} // closed when the request went by
	hit     chan struct{} // closed when the fault struck
	release chan struct{} // a held reply goes on when this is closed
	once    sync.Once
	taken   bool
	refuse  bool // the proxy refuses connections once the fault struck
}

type faultAction int

const (
	cutReply    faultAction = iota // drop the reply, cut the connection
	holdReply                      // hold the reply (and those after it) until Release
	noticeReply                    // pass the reply on, then strike
)

// Release lets a reply held by HoldReply go on to the client.
func (f *ZKFault) Release() { f.once.Do(func() { close(f.release) }) }

// Seen is closed when the matching request has been sent to the server.
func (f *ZKFault) Seen() <-chan struct{} { return f.seen }

// Hit is closed once the fault has struck.
func (f *ZKFault) Hit() <-chan struct{} { return f.hit }

// ThenRefuse makes the proxy, when the fault strikes, cut every connection
// and refuse new ones until Restore: the client cannot reconnect in between.
func (p *ZKProxy) ThenRefuse(f *ZKFault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f.refuse = true
}

// NewZKProxy relays 127.0.0.1:<free port> to the ZooKeeper server at target
// until the test ends.
func NewZKProxy(t testing.TB, target string) *ZKProxy {
	t.Helper()
	p := &ZKProxy{ln: listenLoopback(t), target: target, sessions: map[int64][]byte{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { // stop accepting, let everything go, wait for the relays
		p.ln.Close()
		p.mu.Lock()
		for _, f := range p.faults {
			f.Release()
		}
		p.mu.Unlock()
		p.Resume()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is the address clients dial instead of the server's.
func (p *ZKProxy) Addr() string { return p.ln.Addr().String() }

// CutBeforeReply arms a fault: the first request that match accepts (by
// opcode and path) goes to the server, and when its reply comes back the
// proxy drops it and cuts that client's connection. The server has done
// what was asked; the client hears only that its connection was lost, and
// reconnects (through the proxy) to the same session.
func (p *ZKProxy) CutBeforeReply(match func(op int32, path string) bool) *ZKFault {
	return p.arm(match, cutReply)
}

// HoldReply arms a fault: the reply to the first request that match accepts
// is held back, with every reply after it on that connection, until the
// fault's Release (or the end of the test). The fault strikes (Hit) when the
// reply is held. Keep it shorter than the client's read timeout (two thirds
// of the session timeout), or the client drops the connection.
func (p *ZKProxy) HoldReply(match func(op int32, path string) bool) *ZKFault {
	return p.arm(match, holdReply)
}

// NoticeReply arms a fault that changes nothing: it strikes (Hit) once the
// reply to the first request that match accepts has been passed on to the
// client. A test learns from it that the client has had its answer.
func (p *ZKProxy) NoticeReply(match func(op int32, path string) bool) *ZKFault {
	return p.arm(match, noticeReply)
}

func (p *ZKProxy) arm(match func(op int32, path string) bool, action faultAction) *ZKFault {
	f := &ZKFault{match: match, action: action, seen: make(chan struct{}), hit: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
	return f
}

// ExpireSessions ends every session the proxy has seen established, as
// ZooKeeper's own tests do: it connects to the server directly with the
// session's id and password and closes the session. The clients learn it
// when they next hear from the server: their session has expired.
func (p *ZKProxy) ExpireSessions() error {
	sessions, err := p.seen()
	if err != nil {
		return err
	}
	for id, pw := range sessions {
		if err := closeZKSession(p.target, id, pw); err != nil {
			return fmt.Errorf("e2e: expire session %#x: %w", id, err)
		}
		p.mu.Lock()
		delete(p.sessions, id)
		p.mu.Unlock()
	}
	return nil
}

// KeepSessions keeps every session the proxy has seen established alive
// on the server without its client, as a server does for a client it can no
// longer reach but whose session it has not expired (a new ensemble leader
// gives every session a fresh timeout): for each session it connects as that
// session (id and password, which moves the session to it) and pings it,
// until stop is called or the session's own client connects again (the
// server then closes the keeper's connection). Cut the clients off first, or
// they take their sessions straight back. stop closes the keepers'
// connections without closing the sessions.
func (p *ZKProxy) KeepSessions() (stop func(), err error) {
	// The session timeout the keeper asks for: twenty pings' worth, so that
	// a busy machine does not let the session expire while it is kept; the
	// server expires it that long after stop.
	const keeperTimeoutMs = 6000
	sessions, err := p.seen()
	if err != nil {
		return nil, err
	}
	var conns []net.Conn
	var wg sync.WaitGroup
	stop = func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}
	for id, pw := range sessions {
		conn, err := connectAsZKSession(p.target, id, pw, keeperTimeoutMs)
		if err != nil {
			stop()
			return nil, fmt.Errorf("e2e: keep session %#x: %w", id, err)
		}
		conns = append(conns, conn)
		wg.Add(2)
		go func() { // pings, until the connection closes
			defer wg.Done()
			ping := binary.BigEndian.AppendUint32(nil, uint32(int64(zkXidPing)&0xffffffff))
			ping = binary.BigEndian.AppendUint32(ping, uint32(zkOpPing))
			for {
				conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if writeZKPacket(conn, ping) != nil {
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		}()
		go func() { // drains the answers; a read error ends the keeper
			defer wg.Done()
			defer conn.Close()
			for {
				conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := readZKPacket(conn); err != nil {
					return
				}
			}
		}()
	}
	return stop, nil
}

// seen returns the id and password of every session seen established.
func (p *ZKProxy) seen() (map[int64][]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sessions) == 0 {
		return nil, errors.New("e2e: no session seen through the proxy")
	}
	sessions := make(map[int64][]byte, len(p.sessions))
	for id, pw := range p.sessions {
		sessions[id] = pw
	}
	return sessions, nil
}

func (p *ZKProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.cut { // refused until Restore, or the test is over
			p.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		p.conns = append(p.conns, in, out)
		p.wg.Add(2)
		p.mu.Unlock()
		c := &zkConn{p: p, client: in, server: out, pending: map[int32]*ZKFault{}}
		go c.requests()
		go c.replies()
	}
}

// zkConn is one relayed client connection.
type zkConn struct {
	p              *ZKProxy
	client, server net.Conn

	mu      sync.Mutex
	pending map[int32]*ZKFault // xid → the fault its reply triggers
}

func (c *zkConn) close() {
	c.client.Close()
	c.server.Close()
}

// requests relays the client's packets, noting the xids of the requests a
// fault matches.
func (c *zkConn) requests() {
	defer c.p.wg.Done()
	defer c.close()
	first := true
	for {
		pkt, err := readZKPacket(c.client)
		if err != nil {
			return
		}
		var matched *ZKFault
		if !first && len(pkt) >= 12 {
			xid := int32(binary.BigEndian.Uint32(pkt[4:]))
			op := int32(binary.BigEndian.Uint32(pkt[8:]))
			path := zkString(pkt[12:])
			c.p.mu.Lock()
			for _, f := range c.p.faults {
				if !f.taken && f.match(op, path) {
					f.taken = true
					c.mu.Lock()
					c.pending[xid] = f
					c.mu.Unlock()
					matched = f
					break
				}
			}
			c.p.mu.Unlock()
		}
		first = false
		if !c.p.wait() {
			return
		}
		if _, err := c.server.Write(pkt); err != nil {
			return
		}
		if matched != nil {
			close(matched.seen)
		}
	}
}

// replies relays the server's packets: it records the session of the
// connect response, and does to the reply a fault waits for what the fault
// says.
func (c *zkConn) replies() {
	defer c.p.wg.Done()
	defer c.close()
	first := true
	for {
		pkt, err := readZKPacket(c.server)
		if err != nil {
			return
		}
		var f *ZKFault
		if first {
			first = false
			// protocolVersion int32, timeOut int32, sessionId int64, passwd buffer
			if len(pkt) >= 4+16+4 {
				id := int64(binary.BigEndian.Uint64(pkt[12:]))
				n := int(binary.BigEndian.Uint32(pkt[20:]))
				if n >= 0 && 24+n <= len(pkt) {
					c.p.mu.Lock()
					c.p.sessions[id] = append([]byte(nil), pkt[24:24+n]...)
					c.p.mu.Unlock()
				}
			}
		} else if len(pkt) >= 8 {
			xid := int32(binary.BigEndian.Uint32(pkt[4:]))
			c.mu.Lock()
			f = c.pending[xid]
			delete(c.pending, xid)
			c.mu.Unlock()
		}
		if f != nil && f.action == cutReply {
			c.p.mu.Lock()
			refuse := f.refuse
			c.p.mu.Unlock()
			if refuse {
				c.p.Cut()
			}
			close(f.hit)
			return // the reply is dropped, the connection cut (deferred close)
		}
		if f != nil && f.action == holdReply {
			close(f.hit)
			<-f.release // released by the test, or at its end
		}
		if !c.p.wait() {
			return
		}
		if _, err := c.client.Write(pkt); err != nil {
			return
		}
		if f != nil && f.action == noticeReply {
			close(f.hit)
		}
	}
}
