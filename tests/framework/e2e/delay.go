package e2e

import (
	"math/rand/v2"
	"net"
	"time"
)

// Jitter delays every chunk the proxy relays from now on, each way, by a
// time drawn uniformly from [lo, hi], keeping each stream's order (a chunk
// never passes the one before it): a slow, uneven link, the delay with
// jitter netem would make (this kernel has no netem), for connections
// that go through the proxy. The delay is a line, not a queue: chunks in
// flight together are delayed together, as on a wire. Jitter(0, 0) ends
// it for new chunks; chunks in flight keep their times.
func (p *Proxy) Jitter(lo, hi time.Duration) {
	if hi < lo {
		lo, hi = hi, lo
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jitterLo, p.jitterHi = lo, hi
}

// delay draws one chunk's delay.
func (p *Proxy) delay() time.Duration {
	p.mu.Lock()
	lo, hi := p.jitterLo, p.jitterHi
	p.mu.Unlock()
	if hi <= 0 {
		return 0
	}
	return lo + rand.N(hi-lo+1)
}

// delayLine writes chunks to dst, each at its time, in order, from a
// goroutine of its own: the relay reads on while chunks wait.
type delayLine struct {
	ch   chan timedChunk
	done chan struct{}
	last time.Time // the latest chunk's time: no chunk goes before it
}

type timedChunk struct {
	b   []byte
	due time.Time
}

func newDelayLine(dst net.Conn) *delayLine {
	l := &delayLine{ch: make(chan timedChunk, 4096), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		failed := false
		for c := range l.ch {
			if failed {
				continue // drained, so that send never blocks on a dead line
			}
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.b); err != nil {
				failed = true
				dst.Close() // the relay's next read or write ends it
			}
		}
	}()
	return l
}

// send queues a copy of chunk to go d from now, or after the chunk before.
func (l *delayLine) send(chunk []byte, d time.Duration) {
	due := time.Now().Add(d)
	if due.Before(l.last) {
		due = l.last
	}
	l.last = due
	l.ch <- timedChunk{b: append([]byte(nil), chunk...), due: due}
}

// close waits for the chunks in flight to be written (or the write to fail).
func (l *delayLine) close() {
	close(l.ch)
	<-l.done
}
