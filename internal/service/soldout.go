package service

import (
	"sync"
	"time"
)

// soldOutMarks remembers, per goods, that this instance saw it sold out, so
// that later buyers are answered at once instead of queueing for the lock
// to hear the same. During a sale the stock only goes down, so the answer
// stays right until a restock; a mark lasts `ttl`, after which the next
// buyer asks the database again. That is how a restock reaches every
// instance: nobody needs to tell them, each finds out within ttl.
type soldOutMarks struct {
	ttl time.Duration // <0: never mark

	mu    sync.Mutex
	until map[int32]time.Time
}

func newSoldOutMarks(ttl time.Duration) *soldOutMarks {
	return &soldOutMarks{ttl: ttl, until: map[int32]time.Time{}}
}

// mark records that goodsNo was seen sold out now.
func (m *soldOutMarks) mark(goodsNo int32) {
	if m == nil || m.ttl < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.until[goodsNo] = time.Now().Add(m.ttl)
}

// seen reports whether goodsNo was seen sold out within ttl.
func (m *soldOutMarks) seen(goodsNo int32) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.until[goodsNo]
	if ok && time.Now().After(until) {
		delete(m.until, goodsNo)
		return false
	}
	return ok
}
