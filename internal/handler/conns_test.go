package handler_test

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/handler"
)

// One address holds at most its share of connections; another address,
// and an exempt one, are not held up by it; a closed connection gives its
// place back.
func TestAClientHoldsAtMostItsShareOfConnections(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	exempt := netip.MustParseAddr("127.0.0.3")
	ln := handler.LimitPerClient(inner, 2, func(a netip.Addr) bool { return a == exempt })
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// refused reports whether the server closed c without a word.
	refused := func(c net.Conn) bool {
		if err := c.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	take := func(want int) []net.Conn {
		t.Helper()
		var got []net.Conn
		for range want {
			select {
			case c := <-accepted:
				got = append(got, c)
			case <-time.After(5 * time.Second):
				t.Fatalf("accepted %d of %d", len(got), want)
			}
		}
		return got
	}
	a1, a2 := dial("127.0.0.1"), dial("127.0.0.1")
	held := take(2)
	a3 := dial("127.0.0.1")
	if !refused(a3) {
		t.Fatal("a third connection of one address was not refused")
	}
	b := dial("127.0.0.2")
	take(1)
	if refused(b) {
		t.Fatal("another address was refused")
	}
	for range 3 {
		dial("127.0.0.3")
	}
	take(3) // the exempt address has no share
	_, _ = a1, a2
	held[0].Close() // the server closes one of the first two: its place is free
	a4 := dial("127.0.0.1")
	take(1)
	if refused(a4) {
		t.Fatal("a place given back was not taken")
	}
}
