package service

import (
	"context"
	"fmt"
)

// A client's read of the shop's rows (a goods, a page of goods, an order)
// waits for the database readTimeout at most, then hears 503 unavailable.
// A node cut off its network drops packets rather than refusing them, and a
// read without a deadline waited as long as TCP does: minutes, in make
// test-compose's cluster profile with `docker network disconnect`.

// boundRead is ctx bounded by readTimeout.
func boundRead(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, readTimeout)
}

// readErr is err of a read under ctx (from boundRead): ErrUnavailable when
// ctx ended, so that the answer says the database did not answer.
func readErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w: the database did not answer the read within %v: %w", ErrUnavailable, readTimeout, err)
}
