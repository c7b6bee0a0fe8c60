package zklock

import (
	"context"
	"errors"
	"path"
	"slices"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// The turnstile of an ArrivalMutex (arrival.go): who holds the lock, taken
// by a conditional write, and tidied away when nobody waits.

// turnstileRead is one read of the turnstile.
type turnstileRead struct {
	data []byte
	stat *zk.Stat
	err  error
}

// readEarly reads the turnstile in the background (no watch).
func (m *ArrivalMutex) readEarly(ctx context.Context) <-chan turnstileRead {
	ch := make(chan turnstileRead, 1)
	go func() {
		var r turnstileRead
		r.err = m.c.Retry(ctx, func() (err error) {
			r.data, r.stat, err = m.c.Get(ctx, path.Join(m.dir, turnstileName))
			return err
		})
		ch <- r
	}()
	return ch
}

// turn tries the turnstile once our node is first (early, if not nil, is a
// read of it sent after the listing that said so): the turnstile's stat
// after our write when it is ours; nil, nil when another holds it (and it
// has been waited for) or the write lost a race: look again.
func (m *ArrivalMutex) turn(ctx context.Context, s *zk.Session, name string, early <-chan turnstileRead) (*zk.Stat, error) {
	p := path.Join(m.dir, turnstileName)
	var r turnstileRead
	var ch <-chan zk.Event
	if early != nil {
		r = <-early
	}
	if early == nil || r.err == nil && isHeldByAnother(r.data, name) {
		// A watch is needed to wait for the holder: read again with one.
		r.err = m.c.Retry(ctx, func() (err error) {
			r.data, r.stat, ch, err = m.c.GetW(ctx, p)
			return err
		})
	}
	if errors.Is(r.err, zk.ErrNoNode) {
		return nil, m.makeTurnstile(ctx)
	}
	if r.err != nil {
		return nil, r.err
	}
	if isHeldByAnother(r.data, name) {
		live, err := m.waitHolder(ctx, s, path.Join(m.dir, string(r.data)), ch)
		if err != nil || live {
			return nil, err // it was held, and has changed: look again
		}
	}
	return m.take(ctx, p, name, r.stat.Version)
}

// isHeldByAnother reports whether the turnstile's data names a node other
// than ours (live or not).
func isHeldByAnother(data []byte, name string) bool { return len(data) > 0 && string(data) != name }

// take writes our name into the turnstile at version v: its stat when the
// write won, nil, nil when another write came first.
func (m *ArrivalMutex) take(ctx context.Context, p, name string, v int32) (*zk.Stat, error) {
	var st *zk.Stat
	err := m.c.Retry(ctx, func() (err error) {
		st, err = m.c.Set(ctx, p, []byte(name), v)
		if errors.Is(err, zk.ErrBadVersion) {
			st, err = m.ours(ctx, p, name) // our first write may have been applied
		}
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil // tidied away meanwhile (tidy): look again, and make it anew
	}
	return st, err
}

// ours reads the turnstile after a conditional write failed on its version:
// its stat if it names us (a write of ours that was applied before the
// connection dropped), else nil, nil.
func (m *ArrivalMutex) ours(ctx context.Context, p, name string) (*zk.Stat, error) {
	data, st, err := m.c.Get(ctx, p)
	if err != nil || string(data) != name {
		return nil, err
	}
	return st, nil
}

// makeTurnstile creates the lock path's turnstile, free.
func (m *ArrivalMutex) makeTurnstile(ctx context.Context) error {
	return m.c.Retry(ctx, func() error {
		_, err := m.c.CreatePersistent(ctx, path.Join(m.dir, turnstileName), nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
}

// waitHolder watches the holder's node while the turnstile (watched by
// turnstile) names it: false at once when the node is gone (its holder's
// session ended: the lock is free), true once either changes.
func (m *ArrivalMutex) waitHolder(ctx context.Context, s *zk.Session, holder string, turnstile <-chan zk.Event) (bool, error) {
	var ch <-chan zk.Event
	err := m.c.Retry(ctx, func() (err error) {
		_, _, ch, err = m.c.GetW(ctx, holder)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.c.stats.watches.Add(1)
	select {
	case <-ch:
	case <-turnstile:
	case <-s.Done():
		return false, zk.ErrSessionLost
	case <-ctx.Done():
		return false, ctx.Err()
	}
	m.c.stats.wakeups.Add(1)
	return true, nil
}

// waitGone waits for a data watch on p to fire (at once if p is gone).
func (m *ArrivalMutex) waitGone(ctx context.Context, s *zk.Session, p string) error {
	q := queue{c: m.c, dir: m.dir}
	_, err := q.watch(ctx, s, p)
	return err
}

// joinArrivals adds d to the client's count of participants on dir and
// returns the count.
func (c *Client) joinArrivals(dir string, d int) int {
	c.arrivalMu.Lock()
	defer c.arrivalMu.Unlock()
	if c.arriving == nil {
		c.arriving = map[string]int{}
	}
	n := c.arriving[dir] + d
	if n <= 0 {
		delete(c.arriving, dir)
		return 0
	}
	c.arriving[dir] = n
	return n
}

// tidy deletes, in the background, a free turnstile that nobody waits
// for: the last of this client's participants on the lock path has gone,
// and the others' waiters may have gone too. A turnstile naming a node
// that is gone is free. A participant that comes meanwhile makes it again.
func (m *ArrivalMutex) tidy() {
	m.c.Background(func(ctx context.Context) {
		kids, err := m.c.children(ctx, m.dir)
		if err != nil || slices.ContainsFunc(kids, func(k string) bool { return k != turnstileName }) {
			return // somebody waits, or holds: the last of them tidies
		}
		p := path.Join(m.dir, turnstileName)
		data, st, err := m.c.Get(ctx, p)
		if err != nil || len(data) > 0 && slices.Contains(kids, string(data)) {
			return
		}
		_ = m.c.Delete(ctx, p, st.Version) // a version moved since: someone took it, and tidies
	})
}
