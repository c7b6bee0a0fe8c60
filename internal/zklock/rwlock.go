package zklock

import (
	"errors"
	"strings"
)

// ErrUpgrade is returned when a handle holding the read lock asks for the
// write lock: its writer node would queue behind its own reader forever.
var ErrUpgrade = errors.New("zklock: read lock cannot be upgraded to the write lock")

// ReadWriteLock is Curator's InterProcessReadWriteLock: one path, reader nodes
// "_c_<uuid>-__READ__<seq>" and writer nodes "_c_<uuid>-__WRIT__<seq>", sorted
// together by sequence. A writer holds when it is first; a reader holds while
// no writer is ahead of it, and otherwise watches the first writer. The
// writer of a handle may take the read lock too (downgrade: take read, then
// release write); the reader may not take the write lock (no upgrade).
type ReadWriteLock struct {
	read, write *Mutex
}

// NewReadWriteLock returns a handle on the read/write lock at lockPath. Like
// a Mutex, each of its two locks is reentrant per handle.
func NewReadWriteLock(c *Client, lockPath string) *ReadWriteLock {
	l := &ReadWriteLock{}
	markers := []string{readMarker, writeMarker}
	l.write = newMutex(c, lockPath, writeMarker, rule{
		markers: markers,
		holds: func(kids []string, i int) (bool, string) {
			if i == 0 {
				return true, ""
			}
			return false, kids[i-1]
		},
	}, mutexOptions{forbidden: func() error {
		if l.read.IsHeld() {
			return ErrUpgrade // no upgrade: a reader may not take the write lock
		}
		return nil
	}})
	l.read = newMutex(c, lockPath, readMarker, rule{
		markers: markers,
		holds: func(kids []string, i int) (bool, string) {
			if l.write.IsHeld() {
				return true, "" // downgrade: our own writer is ahead
			}
			for _, k := range kids[:i] {
				if isWriter(k) {
					return false, k
				}
			}
			return true, ""
		},
	}, mutexOptions{})
	return l
}

func isWriter(name string) bool {
	return strings.Contains(name, writeMarker)
}

// ReadLock is the shared lock.
func (l *ReadWriteLock) ReadLock() *Mutex { return l.read }

// WriteLock is the exclusive lock.
func (l *ReadWriteLock) WriteLock() *Mutex { return l.write }
