// Package service holds the shop's business rules: the seckill purchase of
// the Spring seed (read the stock, check it, write it back minus one), an order
// row per sale, and the distributed lock that makes the read-modify-write safe
// across instances.
//
// The Shop (this file) does what every purchase needs: the goods number,
// the sale window, the sold-out marks, admission, retries and the outcome
// of a cut-off commit. It sells with one strategy of the registry
// (strategy.go), each in its own file with the store interface it needs:
// seed.go, batch.go, atomic.go, allot.go (and allotlease.go), unlocked.go.
// What strategies share has files of its own: lock.go (taking and handing
// on the lock), queue.go (the buyers waiting for a batch), sale.go (a
// batch's decision and the buyer rules).
//
// A store's sale runs the service's decision inside its transaction, in
// one shape for every strategy (Decide, sale.go): the store claims the
// rows and reads the facts the buyer rules need, the strategy decides whom
// to sell to, the store writes, calls the strategy's guard and commits.
// The allot strategy's grant also takes a function, of a goods' row and
// the stock wanted, for how much to take (grantSize): a rule of the
// service applied to the row the grant locked.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Goods is a goods_stock row.
type Goods struct {
	ID       uint32
	GoodsNo  int32
	Stock    int32 // a NULL stock reads as 0
	IsActive int16
	// The sale window; nil is open on that side.
	SaleStart, SaleEnd *time.Time
}

// StockInfo is a goods' row with the number of order rows it has: the
// load tester's measure of overselling (orders - stock sold).
type StockInfo struct {
	Goods
	Orders         int64            // all order rows
	OrdersByStatus map[string]int64 // by OrderUnpaid, OrderPaid, OrderExpired
	// CountedAt is when the orders were counted (at most a second before
	// the read: counts.go); the goods' row is read fresh.
	CountedAt time.Time
}

// SaleTotals is a sale across every goods: the goods' rows, how many of
// them have no stock left, and the pieces left over all of them.
type SaleTotals struct {
	Goods, SoldOut, StockLeft int64
}

// Order is an order_info row: one per successful purchase.
//
// A request id is its buyer's: the purchase's idempotency key is the pair
// (UserID, RequestID) (Key), so another buyer's use of an id neither blocks
// nor reveals this buyer's.
type Order struct {
	ID        uint64
	GoodsNo   int32
	RequestID string
	// UserID is the buyer's id, "" when the buyer gave none. With
	// OnePerBuyer the database keeps one such order per goods and buyer
	// among those not expired (ErrAlreadyBought).
	UserID      string
	OnePerBuyer bool
	// NewRequestID: the request id is one the shop made for this purchase
	// (the buyer sent none), so no order can hold it yet and the store
	// need not look for one before it writes.
	NewRequestID bool
	// Replayed: the purchase was made before, under the same request id;
	// this is its order (not stored).
	Replayed bool
	// Arrived is the buyer's place in the order of arrival: when the shop
	// read its request, or the first request of the place it came back
	// with (the waiting room's). A Locker that orders its waiters by
	// arrival serves them by it. Not stored.
	Arrived   time.Time
	Status    string // OrderUnpaid, OrderPaid or OrderExpired
	CreatedAt time.Time
	PaidAt    *time.Time
	ExpiredAt *time.Time
}

// RequestKey is a purchase's idempotency key: a request id and its buyer
// ("" when anonymous). The database keeps one order per key.
type RequestKey struct {
	UserID, RequestID string
}

// Key is the order's idempotency key.
func (o *Order) Key() RequestKey { return RequestKey{o.UserID, o.RequestID} }

// An order's states: placed unpaid, holding its piece of stock; then paid,
// or expired by the sweeper, which returns the piece.
const (
	OrderUnpaid  = "unpaid"
	OrderPaid    = "paid"
	OrderExpired = "expired"
)

// Store is what the Shop needs of the store for every strategy: the goods'
// rows, their order counts, and the lookups that tell a buyer refused what
// it holds. Each strategy declares the store it sells through beside it
// (SeedStore, BatchStore, AtomicStore, UnlockedStore, AllotStore).
type Store interface {
	// Goods reads the row of goodsNo, or returns ErrNotFound.
	Goods(ctx context.Context, goodsNo int32) (Goods, error)
	// GoodsOf reads the rows of several goods at once; a goods without a
	// row is missing from the answer.
	GoodsOf(ctx context.Context, goodsNos []int32) (map[int32]Goods, error)
	// OrderCounts counts the order rows of each of goodsNos by status.
	OrderCounts(ctx context.Context, goodsNos []int32) (map[int32]map[string]int64, error)
	// SaleTotals sums the stock of every goods.
	SaleTotals(ctx context.Context) (SaleTotals, error)
	// OrderByRequestID reads the order of a buyer's request id, if there is
	// one (another buyer's order under the same id is not it).
	OrderByRequestID(ctx context.Context, key RequestKey) (order Order, found bool, err error)
	// ActiveOrderOfBuyer reads the order of goodsNo a buyer holds under the
	// one-per-buyer rule, if there is one.
	ActiveOrderOfBuyer(ctx context.Context, goodsNo int32, userID string) (order Order, found bool, err error)
}

// Locker hands out the distributed lock that serialises purchases of one
// goods number across all instances. arrived is when the buyer the lock is
// for arrived (a batch's: its earliest buyer's); a Locker whose waiters are
// served by arrival (lock.order) serves them in its order.
type Locker interface {
	Lock(ctx context.Context, goodsNo int32, arrived time.Time) (Lease, error)
}

// LockKeyer is what a Locker may also tell: which goods share one lock.
// Goods of one key are one lock (a fixed lock path, or a stripe of goods);
// the batch strategy then sells the waiting buyers of all of them under one
// hold, in one transaction. A Locker without it has a lock per goods.
type LockKeyer interface {
	LockKey(goodsNo int32) string
}

// Lease is a held lock.
type Lease interface {
	// Lost is closed when the lock can no longer be trusted to be held.
	Lost() <-chan struct{}
	// Token is the hold's fencing token: it grows from holder to holder.
	Token(ctx context.Context) (int64, error)
	// Unlock releases the lock.
	Unlock(ctx context.Context) error
}

// ArrivalCutter is what a Lease may also tell, when its lock serves its
// waiters by arrival: the arrival of the earliest one waiting behind the
// hold (ok false: none). A batch sells under the hold only the buyers who
// arrived before it (and within batchCutSlack after), so that the order of
// arrival holds across the instances.
type ArrivalCutter interface {
	NextArrival(ctx context.Context) (at time.Time, ok bool, err error)
}

// Purchaser is one purchase strategy: it sells one piece of order.GoodsNo
// to one buyer and fills in the order, or returns why not. Nothing is
// written unless it returns nil. Strategies are chosen once, at start,
// from the registry (Strategies).
type Purchaser interface {
	Purchase(ctx context.Context, order *Order) error
	// Close refuses new buyers and waits for those under way (and gives
	// back what the strategy holds). Purchase is not called after it.
	Close()
}

// Shop sells goods with one purchase strategy, and does for every strategy
// what is the same: it checks the goods number, answers sold out from what
// it has seen without queueing, refuses the buyers its admission has no
// room for (MaxWaiting, QueueTarget), and finds
// out how a purchase whose commit was cut off ended.
type Shop struct {
	store     Store
	purchaser Purchaser
	cfg       Config
	log       *slog.Logger
	soldOut   *SoldOutMarks
	windows   *saleWindows
	admission *admission
	known     *knownOrders
	// closedOrders: the orders of goods whose sale refuses buyers, for
	// what a refused buyer holds.
	closedOrders *orderIndex
	counts       *orderCounts
	room         *Room // nil: no waiting room
	// inProgress: the buyers with a purchase under way here.
	inProgress inProgress
}

// New returns a Shop that sells with the strategy st, built from d (see
// Strategy). It answers the buyers of a goods d.Marks has seen sold out at
// once; the strategy shares those marks, so that its queued buyers leave at
// the mark. Close it after the last Purchase.
func New(st Strategy, d Deps) (*Shop, error) {
	switch {
	case d.Store == nil:
		return nil, fmt.Errorf("service: the %s strategy needs a store", st.Name)
	case st.Needs.Lock && d.Locker == nil:
		return nil, fmt.Errorf("service: the %s strategy needs a lock", st.Name)
	case st.Needs.Leases && d.Leases == nil:
		return nil, fmt.Errorf("service: the %s strategy needs lease nodes", st.Name)
	}
	d.Env = d.Env.withDefaults()
	d.windows = newSaleWindows(d.Config.WindowFor)
	d.windows.admitUnread = st.ReadsRowsPerBatch
	p, err := st.New(d)
	if err != nil {
		return nil, err
	}
	s := &Shop{store: d.Store, purchaser: p, cfg: d.Config, log: d.Log, soldOut: d.Marks, windows: d.windows,
		admission: newAdmission(d.Config.QueueTarget, d.Config.MaxWaiting, time.Now()), known: newKnownOrders(d.Config.KnownFor), room: d.Room,
		closedOrders: newOrderIndex(d.Config.KnownFor), counts: newOrderCounts()}
	if s.room != nil {
		s.room.attach(s.admission, d.Store)
	}
	return s, nil
}

// Close closes the strategy: new buyers are refused, those under way
// answered, and what it holds given back.
func (s *Shop) Close() { s.purchaser.Close() }

// Admission is how many purchases are in progress in this instance, how
// many it lets in, and how many it has refused busy.
func (s *Shop) Admission() AdmissionStats { return s.admission.stats() }

// Room is the waiting room's state (zero without one).
func (s *Shop) Room() RoomStats { return s.room.Stats() }

// Stock returns the current row of goodsNo and its number of orders.
func (s *Shop) Stock(ctx context.Context, goodsNo int32) (StockInfo, error) {
	if goodsNo <= 0 {
		return StockInfo{}, ErrInvalidGoodsNo
	}
	infos, err := s.Stocks(ctx, []int32{goodsNo})
	if err != nil {
		return StockInfo{}, err
	}
	info, ok := infos[goodsNo]
	if !ok {
		return StockInfo{}, ErrNotFound
	}
	return info, nil
}

// Stocks is Stock of several goods in two reads whatever their number (the
// dashboard's sampler reads every tracked goods each second), the second a
// count of their orders at most a second old (counts.go); a goods without
// a row is missing from the answer, and costs no count.
func (s *Shop) Stocks(ctx context.Context, goodsNos []int32) (map[int32]StockInfo, error) {
	ctx, cancel := boundRead(ctx)
	defer cancel()
	goods, err := s.store.GoodsOf(ctx, goodsNos)
	if err != nil {
		return nil, readErr(ctx, err)
	}
	found := make([]int32, 0, len(goods))
	for no := range goods {
		found = append(found, no) // a goods without a row costs no count
	}
	counts, err := s.counts.get(ctx, s.store, found)
	if err != nil {
		return nil, readErr(ctx, err)
	}
	infos := make(map[int32]StockInfo, len(goods))
	for no, g := range goods {
		var n int64
		for _, c := range counts[no].ByStatus {
			n += c
		}
		infos[no] = StockInfo{Goods: g, Orders: n, OrdersByStatus: counts[no].ByStatus, CountedAt: counts[no].At}
	}
	return infos, nil
}

// Goods reads a goods' row.
func (s *Shop) Goods(ctx context.Context, goodsNo int32) (Goods, error) {
	return s.store.Goods(ctx, goodsNo)
}

// SaleTotals is the sale across every goods (the dashboard's).
func (s *Shop) SaleTotals(ctx context.Context) (SaleTotals, error) {
	return s.store.SaleTotals(ctx)
}

// PurchaseRequest is one buyer's purchase.
type PurchaseRequest struct {
	GoodsNo   int32
	RequestID string
	// ClientRequestID: the buyer chose the request id (X-Request-ID), so a
	// repeat may be a retry whose answer was lost, to be replayed.
	ClientRequestID bool
	// UserID identifies the buyer, "" when anonymous.
	UserID string
	// Place is the waiting room's place the buyer sent back, if any.
	Place string
	// Client is the client's address (the connection's peer, or the client
	// a trusted proxy names): the waiting room bounds the places one
	// address holds.
	Client string
	// Arrived is when the shop read the request (zero: now): a new
	// place's time, the buyer's rank in first come, first served.
	Arrived time.Time
}

// Purchase buys one piece of p.GoodsNo for the request p.RequestID with the
// shop's strategy. Nothing is written unless it returns the order. A request
// id that bought before gets its order back (Replayed), a buyer who holds
// an order of the goods under the one-per-buyer rule an AlreadyBoughtError.
//
// What cannot buy costs nothing shared (known.go): a request id or a
// buyer's order this instance learnt of lately is answered from memory, a
// closed window or a goods marked sold out without the admission, and a
// buyer (or an anonymous buyer's request id) with a purchase under way
// here is refused at once, one at a time (a RateLimitError): none of them
// takes a place in the admission, a lock or a sale's transaction.
func (s *Shop) Purchase(ctx context.Context, p PurchaseRequest) (*Order, error) {
	if p.GoodsNo <= 0 {
		return nil, ErrInvalidGoodsNo
	}
	if o, err, known := s.knownAnswer(p, time.Now()); known {
		return o, err
	}
	o, err := s.buy(ctx, p)
	s.learn(p, o, err)
	return o, err
}

// buy is Purchase past what was known: the sale window, the sold-out mark,
// one purchase at a time per buyer, the admission, the strategy.
//
// With the waiting room, every buyer, named or anonymous (roomWho), goes
// into the admission when its turn has come, else hears its place
// (QueuedError); one who comes before the sale's start gets a place in the
// pre-queue.
func (s *Shop) buy(ctx context.Context, p PurchaseRequest) (*Order, error) {
	who := ""
	if s.room != nil {
		who = roomWho(p)
	}
	var startsAt *time.Time
	if err := s.windows.check(ctx, s.store, p.GoodsNo, s.cfg.Clock.Now()); err != nil {
		var w *WindowError
		if who == "" || !errors.Is(err, ErrNotStarted) || !errors.As(err, &w) {
			return s.refuse(ctx, p, err)
		}
		startsAt = &w.At // the pre-queue
	}
	if startsAt == nil && s.soldOut.check(ctx, s.store, p.GoodsNo) {
		return s.refuse(ctx, p, ErrSoldOut)
	}
	if key, ok := progressKey(p); ok {
		if !s.inProgress.enter(key) {
			return nil, oneAtATime
		}
		defer s.inProgress.leave(key)
	}
	admit := func() bool { return s.admission.admit(time.Now()) }
	arrival := p.Arrived
	if arrival.IsZero() {
		arrival = time.Now()
	}
	if who != "" {
		inStock, done := s.soldOut.whileInStock(p.GoodsNo)
		var marked <-chan struct{}
		if inStock != nil {
			marked = inStock.Done()
		}
		entered, err := s.room.enter(ctx, p.GoodsNo, who, p.Client, p.Place, startsAt, arrival, marked, admit)
		done()
		if errors.Is(err, ErrSoldOut) {
			return s.refuse(ctx, p, err)
		}
		if !entered {
			return nil, err
		}
		arrival = s.room.arrivalOf(p.GoodsNo, who, p.Place, startsAt, arrival)
	} else if !admit() {
		return nil, ErrBusy
	}
	defer func() { s.admission.done(time.Now()); s.room.freed() }()
	order := &Order{GoodsNo: p.GoodsNo, RequestID: p.RequestID, UserID: p.UserID, OnePerBuyer: p.UserID != "" && s.cfg.OnePerBuyer,
		NewRequestID: !p.ClientRequestID, Arrived: arrival}
	since := time.Now()
	bought, err := s.purchase(ctx, order)
	if errors.Is(err, ErrSoldOut) {
		s.soldOut.mark(p.GoodsNo, since)
	}
	if errors.Is(err, ErrNotFound) {
		s.windows.observeMissing(p.GoodsNo, since)
	}
	if err != nil {
		return s.refuse(ctx, p, err)
	}
	return bought, nil
}
