package e2e

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"
)

// TestJitterDelaysEachWayAndKeepsOrder sends numbered lines through a
// jittered proxy to an echo server: each comes back, in order, no sooner
// than the least delay each way.
func TestJitterDelaysEachWayAndKeepsOrder(t *testing.T) {
	ln := listenLoopback(t)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := NewProxy(t, ln.Addr().String())
	const lo, hi = 20 * time.Millisecond, 60 * time.Millisecond
	p.Jitter(lo, hi)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	const lines = 200
	sent := time.Now()
	go func() {
		for i := range lines {
			fmt.Fprintf(c, "%d\n", i) // one chunk each, most likely: each gets its own delay
			time.Sleep(time.Millisecond)
		}
	}()
	r := bufio.NewScanner(c)
	for i := range lines {
		if !r.Scan() {
			t.Fatalf("line %d: %v", i, r.Err())
		}
		if i == 0 {
			if took := time.Since(sent); took < 2*lo {
				t.Errorf("the first line came back in %v: less than %v each way", took, lo)
			}
		}
		if got := r.Text(); got != fmt.Sprint(i) {
			t.Fatalf("line %d came back as %q: out of order", i, got)
		}
	}
	// A line, not a queue: 200 lines a millisecond apart take about their
	// sending time plus one delay each way, not 200 delays.
	if took := time.Since(sent); took > lines*lo {
		t.Errorf("%d lines took %v: the delays were added one after another", lines, took)
	}
}
