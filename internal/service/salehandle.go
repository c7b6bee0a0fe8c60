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

// BatchSale is the Sale of a batch of buyers' orders (BatchStore.BeginBatch,
// AllotStore.BeginAllotted), which the service runs with RunBatch.
type BatchSale interface {
	Sale
	// OrdersFirst reports whether the sale inserted the rows of
	// BatchStart.First with its claim. Then orders that Sell is given and
	// that were not among them (late buyers) have their rows inserted with
	// the writes, and the rows of those not sold are deleted there.
	OrdersFirst() bool
	// Facts reads, in the sale's transaction, what the buyer rules need to
	// know of orders (see Facts), the claimed goods' rows with them: the
	// orders their buyers hold under the one-per-buyer rule and, if
	// lookUp, which of the request ids buyers chose hold an order.
	Facts(ctx context.Context, orders []*Order, lookUp bool) (Facts, error)
	// SellAndCommit is Sell, then Commit: the COMMIT in the writes' packet
	// where nothing their answers say can call it off (one server). It
	// ends the sale either way.
	SellAndCommit(ctx context.Context, sold map[int32][]*Order) error
}

// BatchStart is how a batch's sale begins: a transaction whose first
// packet claims the rows of Goods (sorted, distinct) under a lock whose
// fencing token is Fence (ErrFenced for any, and nothing is left open), a
// goods without a row missing from Sale.Goods. A store whose claim is what
// the next holder waits for inserts the rows of First (orders whose INSERT
// cannot collide, see RunBatch) before it, in the same packet, and says so
// (BatchSale.OrdersFirst); another ignores First.
type BatchStart struct {
	Goods []int32
	Fence int64
	First []*Order
}
