package zk

import (
	"fmt"
	"log/slog"
	"sync"
)

// Session is one ZooKeeper session of a Client. Ephemeral nodes live as long
// as their session.
type Session struct {
	id   int64
	done chan struct{}
	once sync.Once

	mu          sync.Mutex
	interrupted chan struct{} // closed at the next suspension; renewed on reconnect

	created sessionNodes // what may outlive a loss that the server did not see (resume.go)
}

func newSession(id int64) *Session {
	return &Session{id: id, done: make(chan struct{}), interrupted: make(chan struct{})}
}

// ID is ZooKeeper's session id, the ephemeralOwner of this session's nodes.
func (s *Session) ID() int64 { return s.id }

// Done is closed when the session is lost: expired, or the connection down
// for a whole session timeout, or the client closed.
func (s *Session) Done() <-chan struct{} { return s.done }

func (s *Session) end() {
	s.once.Do(func() { close(s.done) })
	s.interrupt()
}

// Interruption returns a channel closed at the session's next suspension
// (or its loss).
func (s *Session) Interruption() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interrupted
}

func (s *Session) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.interrupted:
	default:
		close(s.interrupted)
	}
}

// resume arms a new interruption channel after a reconnect.
func (s *Session) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.interrupted:
		s.interrupted = make(chan struct{})
	default:
	}
}

// zkLogger routes go-zookeeper's log lines to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}
