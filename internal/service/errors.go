package service

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the shop. The handler maps each to one HTTP status; anything else
// is an internal error.
var (
	// ErrInvalidGoodsNo: the goods number is not a positive 32-bit integer.
	ErrInvalidGoodsNo = errors.New("service: goods number must be a positive 32-bit integer")
	// ErrNotFound: no goods_stock row has that goods number.
	ErrNotFound = errors.New("service: goods not found")
	// ErrSoldOut: the stock is below one.
	ErrSoldOut = errors.New("service: sold out")
	// ErrPurchaseFailed: the stock update matched no row (the row vanished).
	ErrPurchaseFailed = errors.New("service: stock row not updated")
	// ErrDuplicateRequest: an order with this request id exists already.
	ErrDuplicateRequest = errors.New("service: duplicate request id")
	// ErrLockTimeout: the lock could not be had within the acquire timeout.
	ErrLockTimeout = errors.New("service: lock not acquired in time")
	// ErrLockLost: the lock was lost before the purchase committed; nothing was written.
	ErrLockLost = errors.New("service: lock lost before commit")
	// ErrFenced: the store refused the purchase's fencing token because a
	// newer lock holder has written the row; nothing was written. It is an
	// ErrLockLost: the lock had passed on.
	ErrFenced = fmt.Errorf("%w: the row was written under a newer lock (fencing token refused)", ErrLockLost)
	// ErrCommitUnknown: the connection failed during the commit, so the
	// purchase may or may not have been made, and checking it failed too. A
	// retry with the same request id is safe.
	ErrCommitUnknown = errors.New("service: purchase outcome unknown (commit interrupted)")
	// ErrBusy: too many buyers are waiting in this instance; try again soon.
	ErrBusy = errors.New("service: too many buyers waiting")
	// ErrInvalidOrderID: the order id is not a positive 64-bit integer.
	ErrInvalidOrderID = errors.New("service: order id must be a positive integer")
	// ErrOrderNotFound: no order has that id.
	ErrOrderNotFound = errors.New("service: order not found")
	// ErrOrderExpired: the order was not paid in time; its piece went back to the stock.
	ErrOrderExpired = errors.New("service: order expired")
	// ErrInvalidUserID: the buyer id is malformed.
	ErrInvalidUserID = errors.New("service: buyer id must be 1-64 of A-Za-z0-9._:-")
	// ErrAlreadyBought: the buyer holds an order of this goods already (one
	// per buyer); an AlreadyBoughtError names it.
	ErrAlreadyBought = errors.New("service: this buyer has bought this goods already")
	// ErrRequestIDConflict: the request id bought another goods before.
	ErrRequestIDConflict = errors.New("service: the request id was used for another goods")
	// ErrNotStarted: the sale has not started; a WindowError says when it does.
	ErrNotStarted = errors.New("service: the sale has not started")
	// ErrEnded: the sale is over.
	ErrEnded = errors.New("service: the sale has ended")
	// ErrUnauthenticated: the request carries no valid credentials of a
	// buyer (with auth.mode jwt: no bearer token, or one that fails its
	// checks).
	ErrUnauthenticated = errors.New("service: no valid credentials")
	// ErrBuyerMismatch: the request names a buyer (X-User-ID, userId) other
	// than its credentials prove.
	ErrBuyerMismatch = errors.New("service: the request names another buyer than its token")
	// ErrTooManyRequests: a buyer or a client address asked more often than
	// its limit allows; a RateLimitError says when to try again.
	ErrTooManyRequests = errors.New("service: too many requests")
	// ErrUnavailable: MySQL or ZooKeeper cannot be reached, or is overloaded.
	ErrUnavailable = errors.New("service: dependency unavailable")
	// ErrConflict: the database refused the purchase's transaction for a
	// conflict with another one (a deadlock, or on a Galera cluster a
	// certification failure or a brute-force abort) and nothing of it was
	// written. The shop tries the purchase again; a buyer hears it only when
	// every try conflicted, as ErrUnavailable.
	ErrConflict = fmt.Errorf("%w: the database refused the transaction for a conflict, nothing was written", ErrUnavailable)
	// ErrConnectionLost: the connection to the database broke and nothing of
	// the purchase was written: before its commit was sent, or its commit
	// was cut off and the order is not there. The shop tries the purchase
	// again, as after ErrConflict: a store that fails over to another
	// server (a Galera node) sells there.
	ErrConnectionLost = fmt.Errorf("%w: the connection to the database broke, nothing was written", ErrUnavailable)
)

// AlreadyBoughtError is ErrAlreadyBought with the buyer's order.
type AlreadyBoughtError struct{ Order Order }

func (e *AlreadyBoughtError) Error() string {
	return fmt.Sprintf("%v: order %d", ErrAlreadyBought, e.Order.ID)
}

func (e *AlreadyBoughtError) Unwrap() error { return ErrAlreadyBought }

// WindowError is ErrNotStarted or ErrEnded with the window's bound.
type WindowError struct {
	Err error // ErrNotStarted or ErrEnded
	At  time.Time
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("%v (%s)", e.Err, e.At.UTC().Format(time.RFC3339))
}

func (e *WindowError) Unwrap() error { return e.Err }

// RateLimitError is ErrTooManyRequests with the wait until the next
// request is allowed and the limit that refused (buyer or client).
type RateLimitError struct {
	Limit      string // "buyer" or "client"
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%v: %s limit, retry after %v", ErrTooManyRequests, e.Limit, e.RetryAfter)
}

func (e *RateLimitError) Unwrap() error { return ErrTooManyRequests }
