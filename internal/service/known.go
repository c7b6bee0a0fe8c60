package service

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// What a purchase can be told before it costs anything shared. A buyer who
// holds an order of the goods, a request id that bought, are answered from
// what this instance learnt of them in the last KnownFor (knownOrders),
// and a buyer (or a request id) already in a purchase here waits for no
// second place (inProgress): neither takes a place in the admission, a
// lock, or a database round trip. What an instance cannot know before the
// claim — another instance's sale a moment ago, an order it never saw —
// the sale's transaction finds, as it always did.

// DefaultKnownFor is how long an instance answers a buyer's order from
// what it learnt (a purchase it made, a refusal that named the order)
// without asking the database, as long as the sold-out marks are trusted:
// an order cleared by `shop stock set --clear-orders` or expired by the
// sweeper shows after at most this long.
const DefaultKnownFor = time.Second

// knownMax bounds the orders one generation of knownOrders keeps: a flood
// of made-up buyers turns the generations over sooner (their entries, and
// real buyers' with them, are then asked of the database again), never
// grows the memory past two generations.
const knownMax = 100_000

// knownOrders remembers orders this instance sold or was told of, by the
// buyer's goods (the one-per-buyer rule) and by the request key (a retry),
// for knownFor. Two generations: entries go in the current one; it becomes
// the previous one after knownFor or at knownMax entries, and the previous
// one is dropped. A lookup checks the entry's age, so nothing older than
// knownFor is answered.
type knownOrders struct {
	knownFor time.Duration

	mu        sync.Mutex
	cur, prev map[knownKey]knownOrder
	curSince  time.Time
}

// knownKey is a buyer's goods (byRequest false) or a request key.
type knownKey struct {
	byRequest bool
	goodsNo   int32
	RequestKey
}

type knownOrder struct {
	order Order
	at    time.Time
}

func newKnownOrders(knownFor time.Duration) *knownOrders {
	return &knownOrders{knownFor: knownFor, cur: map[knownKey]knownOrder{}}
}

// remember records order, learnt at now: under its request key when
// byRequest (the buyer chose the id, so a retry may come), under its
// buyer's goods when the order counts under the one-per-buyer rule.
func (k *knownOrders) remember(order Order, byRequest bool, now time.Time) {
	if k == nil || k.knownFor <= 0 {
		return
	}
	order.Replayed = false
	k.mu.Lock()
	defer k.mu.Unlock()
	if now.Sub(k.curSince) >= k.knownFor || len(k.cur) >= knownMax {
		k.prev, k.cur, k.curSince = k.cur, make(map[knownKey]knownOrder, len(k.cur)), now
	}
	if byRequest {
		k.cur[knownKey{byRequest: true, RequestKey: order.Key()}] = knownOrder{order, now}
	}
	if order.OnePerBuyer && order.UserID != "" {
		k.cur[knownKey{goodsNo: order.GoodsNo, RequestKey: RequestKey{UserID: order.UserID}}] = knownOrder{order, now}
	}
}

// request is the order of a request key learnt within knownFor of now.
func (k *knownOrders) request(key RequestKey, now time.Time) (Order, bool) {
	return k.lookup(knownKey{byRequest: true, RequestKey: key}, now)
}

// held is the order a buyer was known to hold of goodsNo within knownFor
// of now.
func (k *knownOrders) held(goodsNo int32, userID string, now time.Time) (Order, bool) {
	return k.lookup(knownKey{goodsNo: goodsNo, RequestKey: RequestKey{UserID: userID}}, now)
}

func (k *knownOrders) lookup(key knownKey, now time.Time) (Order, bool) {
	if k == nil || k.knownFor <= 0 {
		return Order{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.cur[key]
	if !ok {
		e, ok = k.prev[key]
	}
	if !ok || now.Sub(e.at) >= k.knownFor {
		return Order{}, false
	}
	return e.order, true
}

// inProgress is the buyers (and, for anonymous buyers, the request ids
// they chose) with a purchase under way in this instance: one at a time
// each, so that one buyer takes at most one place of the admission
// whatever it sends. Its size is bounded by the requests under way.
type inProgress struct {
	mu   sync.Mutex
	keys map[RequestKey]struct{}
}

// progressKey is whom a purchase counts against: its buyer, or the
// request id an anonymous buyer chose; ok is false for an anonymous
// purchase with an id the shop made, which nobody can send twice.
func progressKey(p PurchaseRequest) (key RequestKey, ok bool) {
	switch {
	case p.UserID != "":
		return RequestKey{UserID: p.UserID}, true
	case p.ClientRequestID:
		return RequestKey{RequestID: p.RequestID}, true
	}
	return RequestKey{}, false
}

// enter marks key's purchase under way; false when one is already.
func (g *inProgress) enter(key RequestKey) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.keys[key]; ok {
		return false
	}
	if g.keys == nil {
		g.keys = map[RequestKey]struct{}{}
	}
	g.keys[key] = struct{}{}
	return true
}

// leave ends key's purchase.
func (g *inProgress) leave(key RequestKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.keys, key)
}

// oneAtATime is the refusal of a buyer's second purchase while its first
// is under way here: nothing happened, try again once the first answered.
var oneAtATime = &RateLimitError{Limit: "buyer", RetryAfter: time.Second}

// knownAnswer is the answer to p from what this instance learnt within
// KnownFor, if it has one: the order of p's request id (a retry, replayed,
// or ErrRequestIDConflict for another goods), or the order p's buyer holds
// of the goods under the one-per-buyer rule (AlreadyBoughtError).
func (s *Shop) knownAnswer(p PurchaseRequest, now time.Time) (*Order, error, bool) {
	if p.ClientRequestID {
		if o, ok := s.known.request(RequestKey{p.UserID, p.RequestID}, now); ok {
			if o.GoodsNo != p.GoodsNo {
				return nil, fmt.Errorf("%w: it bought goods %d (order %d)", ErrRequestIDConflict, o.GoodsNo, o.ID), true
			}
			o.Replayed = true
			return &o, nil, true
		}
	}
	if p.UserID != "" && s.cfg.OnePerBuyer {
		if o, ok := s.known.held(p.GoodsNo, p.UserID, now); ok && o.RequestID != p.RequestID {
			return nil, &AlreadyBoughtError{Order: o}, true
		}
	}
	return nil, nil, false
}

// learn remembers the order a purchase ended with: its own (bought or
// replayed), or the one its buyer was found to hold.
func (s *Shop) learn(p PurchaseRequest, o *Order, err error) {
	var held *AlreadyBoughtError
	switch {
	case err == nil && o != nil:
		s.known.remember(*o, p.ClientRequestID, time.Now())
	case errors.As(err, &held):
		s.known.remember(held.Order, false, time.Now())
	}
}
