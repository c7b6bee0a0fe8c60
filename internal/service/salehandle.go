package service

import "context"

// Sale is one sale's transaction as the store hands it to the service:
// begun with its claim (the goods' rows locked and read, in the
// transaction's first packet), then written and ended by the service,
// which decides in between. The service owns the transaction; the store
// runs its SQL and keeps its round trips.
type Sale interface {
	// Goods is each claimed goods' row as the claim read it; a goods
	// without a row is missing.
	Goods() map[int32]Goods
	// Sell writes what the service sold: of each goods, its orders' rows
	// and the stock the claim read less their number, with the lock's
	// token as the row's fence. ErrConflict when a row changed since the
	// claim read it (a stale read on a cluster), with nothing written. The
	// orders get their ids, and their rows' other fields, at Commit.
	Sell(ctx context.Context, sold map[int32][]*Order) error
	// Commit ends the sale with its writes. ErrCommitUnknown when the
	// connection broke with the COMMIT sent.
	Commit(ctx context.Context) error
	// Abort ends the sale without its writes because of err, and returns
	// the sale's answer: err, as the store tells it.
	Abort(ctx context.Context, err error) error
}
