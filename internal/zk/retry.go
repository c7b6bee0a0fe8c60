package zk

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// maxRetriesLimit is Curator's cap on ExponentialBackoffRetry's retries: the
// shift 1<<(n+1) must stay within an int32.
const maxRetriesLimit = 29

// ExponentialBackoffRetry is Curator's retry policy of the same name: after
// the n-th failed attempt (n from 0) it sleeps BaseSleep × max(1, rand(1<<(n+1))),
// capped at MaxSleep, and gives up after MaxRetries retries.
type ExponentialBackoffRetry struct {
	BaseSleep  time.Duration // default 1s
	MaxRetries int           // default 10, capped at 29
	MaxSleep   time.Duration // 0 means no cap
}

// sleep returns how long to wait before retry number n (0-based), or false
// when the policy allows no more retries.
func (r ExponentialBackoffRetry) sleep(n int) (time.Duration, bool) {
	maxRetries := min(r.MaxRetries, maxRetriesLimit)
	if n >= maxRetries {
		return 0, false
	}
	d := r.BaseSleep * time.Duration(max(1, rand.IntN(1<<(n+1))))
	if r.MaxSleep > 0 && d > r.MaxSleep {
		d = r.MaxSleep
	}
	return d, true
}

// retryable reports whether a ZooKeeper error is a connection problem that a
// Retry may get past, as Curator's RetryLoop.shouldRetry does. Besides
// go-zookeeper's own errors, that is any network error: when writing a
// request fails (connection reset, broken pipe, write deadline),
// go-zookeeper hands the caller the net.Error itself, and the request was
// not applied.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller gave up (DeadlineExceeded is a net.Error too)
	}
	var netErr net.Error
	return errors.Is(err, gozk.ErrConnectionClosed) ||
		errors.Is(err, gozk.ErrNoServer) ||
		errors.Is(err, gozk.ErrSessionMoved) ||
		errors.As(err, &netErr)
}
