package handler

import (
	"log/slog"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// The handler's log: a debug line per request, and the limiter that keeps
// a failing dependency's errors from flooding it.

// accessLog logs each request at debug level: its method, path, status
// and duration.
func (h *handler) accessLog(c *gin.Context) {
	if !h.log.Enabled(c.Request.Context(), slog.LevelDebug) { // the line's arguments would cost allocations even unlogged
		c.Next()
		return
	}
	start := time.Now()
	c.Next()
	h.log.Debug("request", "method", c.Request.Method, "path", c.Request.URL.Path,
		"status", c.Writer.Status(), "duration", time.Since(start))
}

// logLimiter keeps a failing dependency from flooding the log: per key (a
// status and code) it lets through at most burst lines per interval, and
// tells the next line it lets through how many it held back.
type logLimiter struct {
	interval time.Duration
	burst    int

	mu   sync.Mutex
	keys map[string]*logWindow
}

type logWindow struct {
	start      time.Time
	n          int // lines let through in this window
	suppressed int // lines held back since the last one let through
}

func newLogLimiter(interval time.Duration, burst int) *logLimiter {
	return &logLimiter{interval: interval, burst: burst, keys: map[string]*logWindow{}}
}

// allow reports whether a line of key may be logged now, and how many lines
// of key were held back before it.
func (l *logLimiter) allow(key string, now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil {
		w = &logWindow{start: now}
		l.keys[key] = w
	}
	if now.Sub(w.start) >= l.interval {
		w.start, w.n = now, 0
	}
	if w.n >= l.burst {
		w.suppressed++
		return false, 0
	}
	w.n++
	suppressed, w.suppressed = w.suppressed, 0
	return true, suppressed
}
