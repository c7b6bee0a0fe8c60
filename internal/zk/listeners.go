package zk

import "sync"

// Listeners is a set of callbacks that can each be removed. The zero value
// is ready to use.
type Listeners[T any] struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(T)
}

// Add registers fn and returns the function that removes it.
func (l *Listeners[T]) Add(fn func(T)) (remove func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fns == nil {
		l.fns = make(map[int]func(T))
	}
	id := l.next
	l.next++
	l.fns[id] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.fns, id)
	}
}

// Snapshot returns the current callbacks, to be called without any lock held.
func (l *Listeners[T]) Snapshot() []func(T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fns := make([]func(T), 0, len(l.fns))
	for _, fn := range l.fns {
		fns = append(fns, fn)
	}
	return fns
}
