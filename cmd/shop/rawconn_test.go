package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// rawConn is a benchmark buyer's keep-alive HTTP/1.1 connection to one
// instance: the request written by hand, the answer read with
// http.ReadResponse. It dials when it has no connection.
type rawConn struct {
	host string // host:port
	conn net.Conn
	r    *bufio.Reader
}

func newRawConn(base string) *rawConn {
	return &rawConn{host: strings.TrimPrefix(base, "http://")}
}

// purchase asks for goodsNo and times the answer, a dial included. A
// failed exchange, or an answer with Connection: close, ends the connection.
func (c *rawConn) purchase(goodsNo int32) timedAnswer {
	return c.get(fmt.Sprintf("/goods-stock/%d", goodsNo))
}

// get sends GET path and reads its answer.
func (c *rawConn) get(path string) timedAnswer {
	return c.getWith(path, "")
}

// getWith sends GET path with header, whole lines ("Name: value\r\n"...),
// and reads its answer.
func (c *rawConn) getWith(path, header string) timedAnswer {
	a := timedAnswer{start: time.Now()}
	a.answer = c.exchange(path, header)
	a.end = time.Now()
	if a.err != nil {
		c.close()
	}
	return a
}

func (c *rawConn) exchange(path, header string) answer {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.host, 10*time.Second)
		if err != nil {
			return answer{err: err}
		}
		c.conn, c.r = conn, bufio.NewReader(conn)
	}
	if err := c.conn.SetDeadline(time.Now().Add(5 * time.Minute)); err != nil {
		return answer{err: err}
	}
	if _, err := fmt.Fprintf(c.conn, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, c.host, header); err != nil {
		return answer{err: err}
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return answer{err: err}
	}
	a := answer{status: resp.StatusCode, code: decodeCode(resp)} // reads the body to its end
	if resp.Close {
		c.close()
	}
	return a
}

func (c *rawConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn, c.r = nil, nil
	}
}
