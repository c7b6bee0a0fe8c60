package e2e

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// startEcho runs the echo helper in h and returns its address once it
// listens.
func startEcho(t *testing.T, h *e2e.Host) string {
	t.Helper()
	addr := h.Addr(7007)
	cmd := e2e.HelperCommand(h, "echo", addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	if line := e2e.Receive(t, ready, 30*time.Second, "the echo helper's ready line"); strings.TrimSpace(line) != "ready" {
		t.Fatalf("echo helper in %s: %q", h.NS, line)
	}
	return addr
}

// udpPing sends n datagrams from h to addr and returns how many were
// answered.
func udpPing(t *testing.T, h *e2e.Host, addr string, n int) int {
	t.Helper()
	out, err := e2e.HelperCommand(h, "udpping", addr, strconv.Itoa(n)).Output()
	if err != nil {
		t.Fatalf("udpping from %s: %v", h.NS, err)
	}
	k, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("udpping printed %q", out)
	}
	return k
}

// heard asks the echo server at addr how many datagrams it heard.
func heard(t *testing.T, addr string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintln(c, "count")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	k, _ := strconv.Atoi(strings.TrimSpace(line))
	return k
}

// The test's network does what the partition tests rely on: a cut is
// silence, not a reset — a connection's write is neither answered nor
// refused, and after the heal the same connection carries on (TCP
// retransmitted); a one-way cut drops one direction only; loss drops a
// share of the packets.
func TestTheTestsNetworkCutsHealsAndLoses(t *testing.T) {
	n := e2e.NewNetwork(t)
	a, b := n.Host("a"), n.Host("b")
	addr := startEcho(t, a)

	t.Run("a cut is silence and the connection outlives it", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r := bufio.NewReader(c)
		say := func(line string, wait time.Duration) (string, error) {
			_ = c.SetDeadline(time.Now().Add(wait))
			if _, err := fmt.Fprintln(c, line); err != nil {
				return "", err
			}
			return r.ReadString('\n')
		}
		if got, err := say("before", 5*time.Second); err != nil || got != "before\n" {
			t.Fatalf("before the cut: %q %v", got, err)
		}
		n.CutFromGateway(a)
		got, err := say("during", 2*time.Second)
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Fatalf("during the cut: %q, %v; want a timeout (silence), not an answer or a reset", got, err)
		}
		n.Heal()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if got, err := r.ReadString('\n'); err != nil || got != "during\n" {
			t.Fatalf("after the heal, the line sent during the cut: %q %v", got, err)
		}
	})

	t.Run("one way", func(t *testing.T) {
		if k := udpPing(t, b, addr, 50); k < 45 {
			t.Fatalf("%d of 50 datagrams answered before any cut", k)
		}
		before := heard(t, addr)
		n.CutOneWay(b, a) // a hears nothing from b
		if k := udpPing(t, b, addr, 50); k != 0 {
			t.Errorf("%d of 50 answered with b→a cut", k)
		}
		if h := heard(t, addr) - before; h != 0 {
			t.Errorf("a heard %d datagrams from b with b→a cut", h)
		}
		n.Heal()
		n.CutOneWay(a, b) // b hears nothing from a
		before = heard(t, addr)
		if k := udpPing(t, b, addr, 50); k != 0 {
			t.Errorf("%d of 50 answered with a→b cut", k)
		}
		if h := heard(t, addr) - before; h < 45 {
			t.Errorf("a heard %d of 50 datagrams from b with only a→b cut", h)
		}
		n.Heal()
	})

	t.Run("loss", func(t *testing.T) {
		// 20% on every link: a datagram's round trip from b to a and
		// back crosses two, 0.8^2 = 64% answered.
		n.Loss(20)
		k := udpPing(t, b, addr, 500)
		n.Heal()
		if k < 270 || k > 370 {
			t.Errorf("%d of 500 answered at 20%% loss on every link, want about 320", k)
		}
		t.Logf("%d of 500 answered at 20%% loss", k)
	})
}
