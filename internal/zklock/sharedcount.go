package zklock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// ErrNotStarted is returned by recipes used before Start or after Close.
var ErrNotStarted = errors.New("zklock: recipe not started")

// VersionedValue is a SharedCount's value with the node version it was read
// at, for compare-and-set.
type VersionedValue struct {
	Version int32
	Value   int32
}

// SharedCount is Curator's SharedCount: an int shared by all clients, stored
// as 4 big-endian bytes in one node's data and changed by compare-and-set on
// the node's version. Listeners hear of every change seen.
type SharedCount struct {
	c    *Client
	path string
	seed int32

	mu        sync.Mutex
	cur       VersionedValue
	known     bool // cur was read
	started   bool
	stop      chan struct{}
	listeners zk.Listeners[int32]
	changed   chan struct{} // closed and renewed at each change seen
}

// NewSharedCount returns a handle on the count at countPath; Start creates
// the node with seed when it does not exist.
func NewSharedCount(c *Client, countPath string, seed int32) *SharedCount {
	return &SharedCount{c: c, path: countPath, seed: seed, changed: make(chan struct{})}
}

// Start creates the node if needed, reads the value and keeps it current.
func (s *SharedCount) Start(ctx context.Context) error {
	if err := zk.ValidatePath(s.path); err != nil {
		return err
	}
	var err error
	// The parent is made again if the server reaps it (an empty container)
	// before the count's create, a bounded number of times.
	for attempt := 0; attempt < 3; attempt++ {
		if err := s.c.EnsurePath(ctx, path.Dir(s.path)); err != nil {
			return err
		}
		err = s.c.Retry(ctx, func() error {
			_, err := s.c.CreatePersistent(ctx, s.path, encodeCount(s.seed))
			return err
		})
		if !errors.Is(err, zk.ErrNoNode) {
			break
		}
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("zklock: shared count %s: %w", s.path, err)
	}
	ch, err := s.read(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("zklock: shared count already started")
	}
	s.started = true
	s.stop = make(chan struct{})
	stop := s.stop
	s.mu.Unlock()
	s.c.Background(func(bg context.Context) { s.watch(bg, ch, stop) })
	return nil
}

// read fetches the value with a data watch and records it.
func (s *SharedCount) read(ctx context.Context) (<-chan zk.Event, error) {
	var (
		data []byte
		stat *zk.Stat
		ch   <-chan zk.Event
	)
	err := s.c.Retry(ctx, func() (err error) {
		data, stat, ch, err = s.c.GetW(ctx, s.path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("zklock: read shared count %s: %w", s.path, err)
	}
	v, err := decodeCount(data)
	if err != nil {
		return nil, fmt.Errorf("zklock: shared count %s: %w", s.path, err)
	}
	s.update(VersionedValue{Version: stat.Version, Value: v})
	return ch, nil
}

func (s *SharedCount) update(v VersionedValue) {
	s.mu.Lock()
	if s.known && v.Version-s.cur.Version < 0 {
		// An older read arriving late. The difference, not a plain <:
		// ZooKeeper lets a version wrap from MaxInt32 to MinInt32, and int32
		// arithmetic wraps the same way (CURATOR-688).
		s.mu.Unlock()
		return
	}
	old := s.cur
	s.cur, s.known = v, true
	if old == v {
		s.mu.Unlock()
		return
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	for _, fn := range s.listeners.Snapshot() {
		fn(v.Value)
	}
}

func (s *SharedCount) watch(bg context.Context, ch <-chan zk.Event, stop chan struct{}) {
	for {
		select {
		case <-ch:
		case <-stop:
			return
		case <-bg.Done():
			return
		}
		for n := 0; ; n++ {
			var err error
			if ch, err = s.read(bg); err == nil {
				break
			}
			if s.c.SleepOrStop(bg, stop, n) {
				return
			}
		}
	}
}

// Count is the current value.
func (s *SharedCount) Count() int32 { return s.Versioned().Value }

// Versioned is the current value with its version.
func (s *SharedCount) Versioned() VersionedValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// changes returns a channel closed at the next change seen.
func (s *SharedCount) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// TrySetCount sets the value to n only if the node is still at prev's
// version, and reports whether it did. Versions wrap after 2^31 changes and
// go on; ZooKeeper reads version -1 as "any version", so at that one version
// of every 2^32 the set is unconditional.
func (s *SharedCount) TrySetCount(ctx context.Context, prev VersionedValue, n int32) (bool, error) {
	st, err := s.c.Set(ctx, s.path, encodeCount(n), prev.Version)
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("zklock: set shared count %s: %w", s.path, err)
	}
	s.update(VersionedValue{Version: st.Version, Value: n})
	return true, nil
}

// SetCount sets the value unconditionally.
func (s *SharedCount) SetCount(ctx context.Context, n int32) error {
	_, err := s.TrySetCount(ctx, VersionedValue{Version: -1}, n)
	return err
}

// Listen registers fn for every change of value seen; the returned function
// removes it. fn runs on the goroutine that saw the change.
func (s *SharedCount) Listen(fn func(int32)) (remove func()) {
	return s.listeners.Add(fn)
}

// Close stops following the value.
func (s *SharedCount) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		close(s.stop)
		s.started = false
	}
}

func encodeCount(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

func decodeCount(b []byte) (int32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("count data is %d bytes, want 4", len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}
