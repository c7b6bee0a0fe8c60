package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// withOpenFileLimit is a stand-in for the shop binary that runs it with its
// open-file limit lowered (prlimit execs it: same PID, signals reach it).
func withOpenFileLimit(t *testing.T, binary string, n int) string {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatal("prlimit (util-linux) is needed to lower the shop's open-file limit: apt-get install util-linux")
	}
	script := filepath.Join(t.TempDir(), "shop-limited")
	body := fmt.Sprintf("#!/bin/sh\nexec %s --nofile=%d:%d %s \"$@\"\n", prlimit, n, n, binary)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// An instance allowed 400 open files is held 300 idle keep-alive
// connections, more than it may open: the connection cap keeps it from
// failing accept ("too many open files"), the idle timeout closes the idle
// ones, and a buyer meanwhile is answered. Without the cap and the timeout
// the buyer's connection is never accepted while the idle ones stay.
func TestIdleConnectionsDoNotStarveBuyers(t *testing.T) {
	const idle = 300
	// The idle connections and the buyer share an address here: the
	// per-client share (TestOneClientCannotHoldEveryConnection) is lifted.
	s := e2e.NewStack(t, e2e.WithSetting("server.idleTimeout", "2s"), e2e.WithSetting("server.maxConnectionsPerClient", "1000"))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "5", "--clear-orders")
	s.Binary = withOpenFileLimit(t, e2e.ShopBinary(t), 400)
	in := s.Serve(t)
	if !strings.Contains(in.Logs(), "maxConnections=188") {
		t.Fatalf("want the cap derived from 400 open files (400 - mysql.maxOpenConns 100 - 3 x mysql.saleConns 16 - 64 = 188)\n%s", in.Logs())
	}
	addr := strings.TrimPrefix(in.URL, "http://")

	// Each connection asks once, keeps the connection open and says nothing
	// more; those beyond the cap wait in the listen backlog for their turn.
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	closedByServer := make(chan struct{}, idle)
	var wg sync.WaitGroup
	for range idle {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: shop\r\n\r\n")); err != nil {
				return
			}
			r := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(90 * time.Second))
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				return
			}
			resp.Body.Close()
			if _, err := r.ReadByte(); err != nil { // the server closes the idle connection
				closedByServer <- struct{}{}
			}
		})
	}

	// A buyer meanwhile is answered.
	time.Sleep(500 * time.Millisecond)
	if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1"); a.Err != nil {
		t.Fatalf("a buyer among %d idle connections: %v\n%s", idle, a.Err, in.Logs())
	} else if a.Status != http.StatusOK {
		t.Fatalf("a buyer among idle connections: %d", a.Status)
	}
	wg.Wait()
	if n := len(closedByServer); n != idle {
		t.Errorf("%d of %d idle connections were closed by the server", n, idle)
	}
	if strings.Contains(in.Logs(), "too many open files") {
		t.Errorf("the instance ran out of files:\n%s", in.Logs())
	}
}

// One address holds idle keep-alive connections up to the instance's whole
// cap (server.maxConnections 40): it gets its share (10), the rest of its
// connections are closed at once, and a buyer from another address
// (127.0.0.2) is answered at once. Without the share the buyer waits in the
// listen backlog until server.idleTimeout (60 s) frees a connection.
func TestOneClientCannotHoldEveryConnection(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithSetting("server.maxConnections", "40"), e2e.WithSetting("server.maxConnectionsPerClient", "10"), e2e.WithSetting("server.idleTimeout", "60s"))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "5", "--clear-orders")
	in := s.Serve(t)
	addr := strings.TrimPrefix(in.URL, "http://")
	held, cut := holdIdle(t, addr, 40)
	if held != 10 || cut != 30 {
		t.Fatalf("one address's 40 connections: %d held, %d cut; want its share of 10 held, 30 cut", held, cut)
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /goods-stock/1 HTTP/1.1\r\nHost: shop\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a buyer from another address while one holds its share: %v (waiting for a connection?)\n%s", err, in.Logs())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a buyer from another address: %d", resp.StatusCode)
	}
}

// With a memory limit (GOMEMLIMIT, as the chart sets it from the pod's
// limits.memory) and no server.maxConnections, the cap keeps the
// connections within half of it at 20 KiB each: 16 MiB holds 409, 204 of
// them one address's, and that address's 250th connection is cut. Before,
// the cap followed the open-file limit alone (one address held 8 000 idle
// connections, 150 MB, in a pod of 256 Mi; #75 item 6).
func TestTheConnectionCapFollowsTheMemoryLimit(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithEnv("GOMEMLIMIT=16MiB"), e2e.WithSetting("server.idleTimeout", "60s"))
	s.Shop(t, "migrate")
	in := s.Serve(t)
	if !strings.Contains(in.Logs(), "maxConnections=409 maxConnectionsPerClient=204") {
		t.Fatalf("the listening line does not say the memory's cap (409, 204 a client):\n%s", in.Logs())
	}
	held, _ := holdIdle(t, strings.TrimPrefix(in.URL, "http://"), 250)
	if held != 204 {
		t.Errorf("one address's 250 connections: %d held, want its share of the memory's cap, 204", held)
	}
}

// holdIdle opens n connections to addr from one address, one after
// another, each asking GET /healthz with keep-alive: held were answered
// and are kept open, idle (closed at the test's end), cut were closed.
func holdIdle(t *testing.T, addr string, n int) (held, cut int) {
	t.Helper()
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: shop\r\n\r\n")); err != nil {
			cut++
			continue
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			cut++
			continue
		}
		resp.Body.Close()
		held++
	}
	return held, cut
}

// Request ids that differ in case are two purchases; the same id twice is
// one (the repeat replays the answer); a malformed id is refused and writes
// nothing.
func TestRequestIDsAtTheEdge(t *testing.T) {
	s := e2e.NewStack(t)
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders")
	in := s.Serve(t)
	ask := func(id string) (int, string) {
		a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1", "X-Request-ID", id)
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		return a.Status, a.Code
	}
	for _, c := range []struct {
		id     string
		status int
		code   string
	}{
		{"dup-1", 200, "ok"}, {"DUP-1", 200, "ok"}, {"dup-1", 200, "ok"}, // the last one replayed
		{strings.Repeat("x", 65), 400, "invalid_request_id"}, {"naïve", 400, "invalid_request_id"},
	} {
		if status, code := ask(c.id); status != c.status || code != c.code {
			t.Errorf("X-Request-ID %q: %d %s, want %d %s", c.id, status, code, c.status, c.code)
		}
	}
	if stock, orders := s.Counts(t); stock != 8 || orders != 2 {
		t.Errorf("stock %d with %d orders, want 8 and 2", stock, orders)
	}
}
