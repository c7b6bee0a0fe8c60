// Package loadgen is the load engine: the buyer's connection (Conn), the
// closed loop (Closed: each buyer sends its next request once the last is
// answered), the open loop (Open: requests sent on a schedule, latency
// taken from each one's intended send time), and a sale measured whole
// (Run: the goods read before and after, the shops' metrics, the run's
// Result and what was oversold, Problems). The load tester is Run behind a
// command line; the end-to-end suites and make bench-shop send their
// buyers through Closed and Open.
package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/api"
)

// Answer is what the shop answered one request: its status, the code of
// its JSON body ("not JSON: ..." for another body), the body and header,
// and when it was asked and answered. Err is set, and the rest empty, when
// the exchange failed.
type Answer struct {
	Status     int
	Code       string
	Body       []byte
	Header     http.Header
	Err        error
	Start, End time.Time
	// Written is when the request was written whole, after the dial: when
	// it left the buyer (a patient buyer's first request's).
	Written time.Time
	// Arrived is when the shop read the request (X-Arrived-At; a patient
	// buyer's first request's), zero if it did not say: the buyer's place
	// in a first come, first served order (FairnessOf).
	Arrived time.Time
	// Tries is how many requests a patient buyer sent for this answer
	// (its last): Start is then the first's. 0: one, without patience.
	Tries int
}

// Decode unmarshals the answer's JSON body into v.
func (a Answer) Decode(v any) error {
	if err := json.Unmarshal(a.Body, v); err != nil {
		return fmt.Errorf("status %d, body %.80q: %w", a.Status, a.Body, err)
	}
	return nil
}

// Conn is the buyer: a keep-alive HTTP/1.1 connection to one instance, the
// request written by hand (no body), the answer read with
// http.ReadResponse. It dials when it has no connection; a failed exchange,
// or an answer with Connection: close, ends the connection. Every request
// of the harness goes through one (Ask makes one for a single request); the
// load tests keep one per worker, so the buyers' side costs the machine
// little.
type Conn struct {
	host string // host:port
	conn net.Conn
	r    *bufio.Reader
}

// NewConn is a connection to the instance at base (http://host:port).
func NewConn(base string) *Conn {
	return &Conn{host: strings.TrimPrefix(base, "http://")}
}

// Purchase asks for goodsNo.
func (c *Conn) Purchase(goodsNo int32) Answer {
	return c.Do(http.MethodGet, fmt.Sprintf("/goods-stock/%d", goodsNo))
}

// Get sends GET path with header pairs (name, value, ...).
func (c *Conn) Get(path string, header ...string) Answer {
	return c.Do(http.MethodGet, path, header...)
}

// Do sends method path with header pairs (name, value, ...) and reads the
// answer, timing it (a dial included).
func (c *Conn) Do(method, path string, header ...string) Answer {
	return c.DoBy(time.Now().Add(5*time.Minute), method, path, header...)
}

// DoBy is Do that gives up at deadline: the connection is closed then, as
// a buyer who stops waiting closes it, and the answer's Err says so
// (os.ErrDeadlineExceeded).
func (c *Conn) DoBy(deadline time.Time, method, path string, header ...string) Answer {
	a := c.exchange(deadline, method, path, header)
	if a.Err != nil {
		c.Close()
	}
	return a
}

func (c *Conn) exchange(deadline time.Time, method, path string, header []string) (a Answer) {
	a.Start = time.Now()
	defer func() { a.End = time.Now() }()
	if len(header)%2 != 0 {
		a.Err = fmt.Errorf("header pairs: %q has an odd length", header)
		return a
	}
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.host, min(10*time.Second, time.Until(deadline)))
		if err != nil {
			a.Err = err
			return a
		}
		c.conn, c.r = conn, bufio.NewReader(conn)
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		a.Err = err
		return a
	}
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, c.host)
	for i := 0; i < len(header); i += 2 {
		fmt.Fprintf(&req, "%s: %s\r\n", header[i], header[i+1])
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(c.conn, req.String()); err != nil {
		a.Err = err
		return a
	}
	a.Written = time.Now()
	resp, err := http.ReadResponse(c.r, &http.Request{Method: method})
	if err != nil {
		a.Err = err
		return a
	}
	a.Body, a.Err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if a.Err != nil {
		return a
	}
	a.Status, a.Header, a.Code = resp.StatusCode, resp.Header, codeOf(a.Body)
	if at := resp.Header.Get(api.HeaderArrivedAt); at != "" {
		a.Arrived, _ = time.Parse(api.ArrivedAtLayout, at) // zero if malformed: the order falls back to Written
	}
	if resp.Close {
		c.Close()
	}
	return a
}

// codeOf is a JSON body's code, or "not JSON" and the body's start.
func codeOf(body []byte) string {
	var b struct{ Code string }
	if err := json.Unmarshal(body, &b); err != nil || b.Code == "" {
		return fmt.Sprintf("not JSON: %.40q", body)
	}
	return b.Code
}

// Close ends the connection, if any.
func (c *Conn) Close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.r = nil, nil
	}
}

// Ask sends one request to url (http://host:port/path?query) on a
// connection of its own, with header pairs (name, value, ...).
func Ask(method, rawURL string, header ...string) Answer {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Answer{Err: err, Start: time.Now(), End: time.Now()}
	}
	c := NewConn("http://" + u.Host)
	defer c.Close()
	return c.Do(method, u.RequestURI(), header...)
}
