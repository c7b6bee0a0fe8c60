package e2e

import "github.com/seckill-zk/seckill-zk/internal/loadgen"

// Answer, Conn, NewConn and Ask are the load engine's (internal/loadgen):
// every request of the harness goes through its buyer's connection.
type (
	Answer = loadgen.Answer
	Conn   = loadgen.Conn
)

// NewConn is a connection to the instance at base (http://host:port).
func NewConn(base string) *Conn { return loadgen.NewConn(base) }

// Ask sends one request to url on a connection of its own, with header
// pairs (name, value, ...).
func Ask(method, rawURL string, header ...string) Answer {
	return loadgen.Ask(method, rawURL, header...)
}
