package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// How a purchase ends, past the strategy: its retries after a conflict, the
// outcome of a commit that was cut off, and what a refused buyer hears.

// purchase runs the strategy and finds out how a purchase whose commit was
// cut off ended (outcome). It runs the strategy again, after a random wait
// that grows, while the purchase wrote nothing for a reason that may pass
// at once (a conflict, a broken connection, a cut-off commit that did not
// happen: a retry cannot sell twice, and the request id would tell if it
// did), up to ConflictRetries times and within ctx.
func (s *Shop) purchase(ctx context.Context, order *Order) (*Order, error) {
	for try, wait := 0, 2*time.Millisecond; ; try, wait = try+1, 2*wait {
		err := s.purchaser.Purchase(ctx, order)
		if errors.Is(err, ErrCommitUnknown) {
			var bought *Order
			if bought, err = s.outcome(ctx, order, err); err == nil {
				return bought, nil
			}
		}
		if err == nil {
			return order, nil
		}
		if try >= s.cfg.ConflictRetries || !retryable(err) {
			return nil, err
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
		s.log.Debug("purchase wrote nothing, trying again", "requestId", order.RequestID, "try", try+1, "err", err)
		*order = Order{GoodsNo: order.GoodsNo, RequestID: order.RequestID, UserID: order.UserID, OnePerBuyer: order.OnePerBuyer,
			NewRequestID: order.NewRequestID}
	}
}

// retryable: the purchase failed having written nothing, for a reason
// that may be gone at once.
func retryable(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrConnectionLost)
}

// refuse turns a refusal into what the buyer should hear. A purchase
// repeated under a request id that bought answers with that order (a retry
// whose answer was lost; the id used for another goods is a conflict); a
// buyer refused while holding an order of the goods under the one-per-buyer
// rule hears which order. Otherwise the refusal stands. The lookups are made
// only when the refusal may hide one of those, so anonymous buyers of a
// sold-out goods cost no query; and a refusal of a closed sale (sold out,
// not started, ended) looks the buyer up in its goods' orders, read once a
// KnownFor for every buyer refused meanwhile (closedOrders), not by a query
// of its own (but for a request id the buyer chose that is not there).
func (s *Shop) refuse(ctx context.Context, p PurchaseRequest, err error) (*Order, error) {
	var bought *AlreadyBoughtError
	if errors.As(err, &bought) && bought.Order.RequestID != p.RequestID {
		return nil, err // the store named the order already
	}
	refusal := errors.Is(err, ErrSoldOut) || errors.Is(err, ErrNotStarted) || errors.Is(err, ErrEnded)
	oneEach := p.UserID != "" && s.cfg.OnePerBuyer
	if refusal && (p.ClientRequestID || oneEach) {
		// The crowd refused by a closed sale: its goods' orders, read
		// once a KnownFor for all of them (holders.go). A request id's
		// order found there is replayed; one not found is looked for in
		// the database after all (it may have committed since the read,
		// and a retry whose purchase went through must hear its order). A
		// buyer's order not found there is not: that answer is a courtesy.
		if g, ok := s.closedOrders.of(ctx, s.store, p.GoodsNo); ok {
			if o, found := g.byKey[RequestKey{p.UserID, p.RequestID}]; found && p.ClientRequestID {
				o.Replayed = true
				return &o, nil
			}
			if o, found := g.byBuyer[p.UserID]; found && oneEach {
				return nil, &AlreadyBoughtError{Order: o}
			}
			if !p.ClientRequestID {
				return nil, err
			}
			oneEach = false // asked already
		}
	}
	if errors.Is(err, ErrDuplicateRequest) || errors.Is(err, ErrAlreadyBought) || p.ClientRequestID && refusal {
		o, found, lerr := s.store.OrderByRequestID(ctx, RequestKey{p.UserID, p.RequestID})
		switch {
		case lerr == nil && found && o.GoodsNo != p.GoodsNo:
			return nil, fmt.Errorf("%w: it bought goods %d (order %d)", ErrRequestIDConflict, o.GoodsNo, o.ID)
		case lerr == nil && found:
			o.Replayed = true
			return &o, nil
		}
	}
	if oneEach && (errors.Is(err, ErrAlreadyBought) || refusal) {
		o, found, lerr := s.store.ActiveOrderOfBuyer(ctx, p.GoodsNo, p.UserID)
		if lerr == nil && found {
			return nil, &AlreadyBoughtError{Order: o}
		}
	}
	return nil, err
}

// outcome finds out whether a purchase whose commit was cut off happened,
// by looking for its order (request ids are unique), until OutcomeTimeout.
// The buyer then hears the truth: 200 with the order, or the purchase's
// failure; ErrCommitUnknown only if the database stays away. The lookup
// has a context of its own (ctx's values, not its end): a buyer whose
// deadline passed during the commit is owed the outcome as much as any.
func (s *Shop) outcome(ctx context.Context, order *Order, commitErr error) (*Order, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.OutcomeTimeout)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		o, found, err := s.store.OrderByRequestID(ctx, order.Key())
		switch {
		case err == nil && found && o.GoodsNo != order.GoodsNo:
			// The id bought another goods before (a batch answers its
			// duplicates too with the cut-off commit).
			return nil, fmt.Errorf("%w: it bought goods %d (order %d)", ErrRequestIDConflict, o.GoodsNo, o.ID)
		case err == nil && found:
			s.log.Warn("commit was cut off but went through", "requestId", order.RequestID, "orderId", o.ID)
			return &o, nil
		case err == nil:
			return nil, fmt.Errorf("%w: the commit was cut off and did not happen (%v)", ErrConnectionLost, commitErr)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.log.Error("purchase outcome unknown", "requestId", order.RequestID, "err", commitErr)
			return nil, commitErr
		}
	}
}
