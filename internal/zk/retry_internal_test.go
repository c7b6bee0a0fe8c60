package zk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	gozk "github.com/go-zookeeper/zk"
)

func TestRetryableErrors(t *testing.T) {
	writeErr := func(e error) error { return &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", e)} }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection closed", gozk.ErrConnectionClosed, true},
		{"no server", gozk.ErrNoServer, true},
		{"session moved", gozk.ErrSessionMoved, true},
		{"write reset by the server, as go-zookeeper returns it", writeErr(syscall.ECONNRESET), true},
		{"broken pipe", writeErr(syscall.EPIPE), true},
		{"write deadline", &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"wrapped connection loss", fmt.Errorf("zk: delete /x: %w", writeErr(syscall.ECONNRESET)), true},
		{"no node", gozk.ErrNoNode, false},
		{"node exists", gozk.ErrNodeExists, false},
		{"bad version", gozk.ErrBadVersion, false},
		{"session expired", gozk.ErrSessionExpired, false},
		{"canceled", context.Canceled, false},
		{"caller's deadline", fmt.Errorf("zk: acquire /x: %w", context.DeadlineExceeded), false},
		{"other", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryable(tt.err); got != tt.want {
				t.Errorf("retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
