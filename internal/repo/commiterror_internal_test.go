package repo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// What a transaction's error tells the buyer. Once the COMMIT is out, a
// context's end is not "nothing bought" but "outcome unknown": the commit
// may have been applied (issue 61: a buyer told timeout held an order).
func TestCommitErrorOnceTheCommitIsOut(t *testing.T) {
	deadline := fmt.Errorf("read: %w", context.DeadlineExceeded)
	for _, c := range []struct {
		name       string
		err        error
		committing bool
		want       error
		notWant    error
	}{
		{"a deadline before the commit: the buyer's timeout", deadline, false, context.DeadlineExceeded, service.ErrCommitUnknown},
		{"a deadline during the commit: outcome unknown", deadline, true, service.ErrCommitUnknown, nil},
		{"a cancel during the commit: outcome unknown", context.Canceled, true, service.ErrCommitUnknown, nil},
		{"a broken connection before the commit: nothing written", io.ErrUnexpectedEOF, false, service.ErrConnectionLost, service.ErrCommitUnknown},
		{"a broken connection during the commit: outcome unknown", io.ErrUnexpectedEOF, true, service.ErrCommitUnknown, nil},
		{"a deadlock during the commit: nothing written", &mysql.MySQLError{Number: erLockDeadlock}, true, service.ErrConflict, service.ErrCommitUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := commitError(c.err, c.committing)
			if !errors.Is(got, c.want) {
				t.Errorf("commitError(%v, %t) = %v, want %v in its chain", c.err, c.committing, got, c.want)
			}
			if c.notWant != nil && errors.Is(got, c.notWant) {
				t.Errorf("commitError(%v, %t) = %v, must not be %v", c.err, c.committing, got, c.notWant)
			}
		})
	}
}
