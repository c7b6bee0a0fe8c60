package zklock

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// LeaderSelector is Curator's LeaderSelector: participants queue on a Mutex
// at the leader path (node data: the participant id); the holder runs
// TakeLeadership, and leadership ends when it returns. Its context is
// canceled when the connection is suspended or lost, the lock is lost,
// Interrupt is called or the selector closes. With AutoRequeue the
// participant queues again after each term; otherwise Requeue does it.
type LeaderSelector struct {
	c    *Client
	p    string
	id   string
	take func(ctx context.Context) error

	mu          sync.Mutex
	autoRequeue bool
	queued      bool
	leading     bool
	started     bool
	closed      bool
	interrupt   context.CancelFunc
	queueErr    error // why the last attempt to queue failed; nil once queued
	queueErrAt  time.Time
	wake        chan struct{}
	stop        chan struct{}
	done        chan struct{}
}

// NewLeaderSelector returns a selector at leaderPath for the participant id;
// take runs while this participant leads.
func NewLeaderSelector(c *Client, leaderPath, id string, take func(ctx context.Context) error) *LeaderSelector {
	return &LeaderSelector{c: c, p: leaderPath, id: id, take: take, wake: make(chan struct{}, 1)}
}

// AutoRequeue makes the participant queue again each time its term ends.
// Call it before Start.
func (s *LeaderSelector) AutoRequeue() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.autoRequeue = true
}

// Start queues the participant and returns; terms run in the background.
func (s *LeaderSelector) Start() error {
	if err := zk.ValidatePath(s.p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("zklock: leader selector already started")
	}
	s.started, s.queued = true, true
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.c.Background(func(bg context.Context) {
		defer close(s.done)
		s.run(bg)
	})
	return nil
}

// Requeue queues the participant again if it is not queued or leading, and
// reports whether it did.
func (s *LeaderSelector) Requeue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed || s.queued {
		return false
	}
	s.queued = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// Interrupt ends the current term, if any, by canceling its context.
func (s *LeaderSelector) Interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interrupt != nil {
		s.interrupt()
	}
}

// inQueue: our node is in the queue.
func (s *LeaderSelector) inQueue() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queueErr != nil {
		s.c.Logger().Info("leader election: queued again", "path", s.p, "participantId", s.id,
			"after", time.Since(s.queueErrAt).Round(time.Millisecond).String())
	}
	s.queueErr = nil
}

// QueueError is why the participant could not queue, and since when; nil
// while it is queued or leading, or has not tried yet.
func (s *LeaderSelector) QueueError() (since time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queueErrAt, s.queueErr
}

// HasLeadership reports whether a term of this participant is running.
func (s *LeaderSelector) HasLeadership() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leading
}

// ID is the participant id.
func (s *LeaderSelector) ID() string { return s.id }

// Participants returns the ids queued at the leader path, the leader first.
func (s *LeaderSelector) Participants(ctx context.Context) ([]string, error) {
	return participantIDs(ctx, s.c, s.p, lockMarker)
}

// Close ends the current term, leaves the queue and waits for the
// background goroutine (and so for TakeLeadership to return).
func (s *LeaderSelector) Close() {
	s.mu.Lock()
	if !s.started || s.closed {
		s.closed = true
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.stop)
	if s.interrupt != nil {
		s.interrupt()
	}
	done := s.done
	s.mu.Unlock()
	<-done
}

func (s *LeaderSelector) run(bg context.Context) {
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for n := 0; ; {
		s.mu.Lock()
		queued := s.queued
		s.mu.Unlock()
		if !queued {
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		err := s.term(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// Could not queue (connection trouble, or a path the client may
			// not write): try again after a pause. QueueError tells it; the
			// log says it once, and when it is over.
			s.mu.Lock()
			if s.queueErr == nil {
				s.queueErrAt = time.Now()
				s.c.Logger().Error("leader election: could not queue; trying again until it can", "path", s.p, "participantId", s.id, "err", err)
			}
			s.queueErr = err
			s.mu.Unlock()
			if s.c.SleepOrStop(ctx, s.stop, n) {
				return
			}
			n++
			continue
		}
		n = 0
		s.mu.Lock()
		s.queued = s.autoRequeue
		s.mu.Unlock()
	}
}

// term waits for the lock, runs one term of leadership and releases.
func (s *LeaderSelector) term(ctx context.Context) error {
	m := newMutex(s.c, s.p, lockMarker, standardRule(lockMarker, 1), mutexOptions{data: []byte(s.id), queued: s.inQueue})
	if err := m.Acquire(ctx); err != nil {
		return err
	}
	defer func() { _ = m.Release(context.WithoutCancel(ctx)) }() // failures retried in the background

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.Lost(): // suspended, lost, or node deleted
			cancel()
		case <-tctx.Done():
		}
	}()
	s.mu.Lock()
	s.leading, s.interrupt = true, cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.leading, s.interrupt = false, nil
		s.mu.Unlock()
	}()
	if err := s.take(tctx); err != nil && !errors.Is(err, context.Canceled) {
		s.c.Logger().Warn("takeLeadership returned an error", "path", s.p, "id", s.id, slog.Any("err", err))
	}
	return nil
}
