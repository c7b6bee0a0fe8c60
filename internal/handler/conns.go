package handler

import (
	"net"
	"net/netip"
	"sync"
)

// LimitPerClient returns a listener that lets one client address hold at
// most perClient of ln's connections at once: a connection beyond that is
// closed as soon as it is accepted, so that one address's idle keep-alive
// connections cannot fill server.maxConnections and make everyone else
// wait. exempt, if not nil, names addresses with no share (trusted
// proxies, whose connections carry many clients). perClient <= 0: no
// limit.
func LimitPerClient(ln net.Listener, perClient int, exempt func(netip.Addr) bool) net.Listener {
	if perClient <= 0 {
		return ln
	}
	return &perClientListener{Listener: ln, max: perClient, exempt: exempt, open: map[netip.Addr]int{}}
}

type perClientListener struct {
	net.Listener
	max    int
	exempt func(netip.Addr) bool

	mu   sync.Mutex
	open map[netip.Addr]int // connections held, by client address
}

// Accept returns the next connection whose client has room; the others
// are closed, unanswered.
func (l *perClientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
		if err != nil {
			return c, nil // not TCP: nothing to count by
		}
		ip := ap.Addr().Unmap()
		if l.exempt != nil && l.exempt(ip) {
			return c, nil
		}
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &clientConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *perClientListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// clientConn gives its client's place back once, when it is closed.
type clientConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
