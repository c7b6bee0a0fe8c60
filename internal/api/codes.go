// Package api is the part of the shop's HTTP contract that its clients share:
// the code every JSON answer carries in "code". The handler answers with
// these, the dashboard's data endpoint too, and the load tester counts by
// them; the k6 script and the JMeter plan are checked against All.
package api

// The codes of successful answers.
const (
	OK    = "ok"
	Ready = "ready"
)

// The codes of refusals and failures. The HTTP status of each is the
// handler's error table's.
const (
	InvalidGoodsNo    = "invalid_goods_no"
	InvalidRequestID  = "invalid_request_id"
	InvalidUserID     = "invalid_user_id"
	InvalidOrderID    = "invalid_order_id"
	InvalidTimeout    = "invalid_timeout"
	InvalidPage       = "invalid_page"
	NotStarted        = "not_started"
	Ended             = "ended"
	AlreadyBought     = "already_bought"
	RequestIDConflict = "request_id_conflict"
	GoodsNotFound     = "goods_not_found"
	OrderNotFound     = "order_not_found"
	OrderExpired      = "order_expired"
	SoldOut           = "sold_out"
	PurchaseFailed    = "purchase_failed"
	DuplicateRequest  = "duplicate_request"
	LockTimeout       = "lock_timeout"
	LockLost          = "lock_lost"
	Busy              = "busy"
	Queued            = "queued"
	OutcomeUnknown    = "outcome_unknown"
	Unavailable       = "unavailable"
	Timeout           = "timeout"
	Canceled          = "canceled"
	NotReady          = "not_ready"
	Unauthenticated   = "unauthenticated"
	BuyerMismatch     = "buyer_mismatch"
	TooManyRequests   = "too_many_requests"
	NoRoute           = "no_route"
	MethodNotAllowed  = "method_not_allowed"
	Internal          = "internal"
)

// All is every code above.
var All = []string{
	OK, Ready,
	InvalidGoodsNo, InvalidRequestID, InvalidUserID, InvalidOrderID, InvalidTimeout, InvalidPage, NotStarted, Ended, AlreadyBought,
	RequestIDConflict, GoodsNotFound, OrderNotFound, OrderExpired, SoldOut, PurchaseFailed, DuplicateRequest,
	LockTimeout, LockLost, Busy, Queued, OutcomeUnknown, Unavailable, Timeout, Canceled, NotReady, NoRoute,
	MethodNotAllowed, Internal, Unauthenticated, BuyerMismatch, TooManyRequests,
}
