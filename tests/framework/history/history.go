// Package history records what the clients of a faulted sale did and heard
// — every purchase, payment and read, with its call and return times — and
// checks the history against a model of the shop for linearizability, as
// etcd's robustness tests and Jepsen do: with porcupine's search and one
// rule more (linearize.go), and porcupine's visualisation of a failure.
//
// The model (model.go) is a goods' stock and its orders' states. A client
// that never learned how its operation ended (no answer, outcome_unknown)
// is completed with the database's final rows: a purchase whose order
// exists happened, one whose order does not did nothing; a payment of
// unknown outcome may have happened or not (the model forks). The final
// rows are appended as one read after everything, and each expiry the sweeper
// made (expired_at) as an operation of its own, so that the totals, each
// order's fate and every answer are judged together. The rows' times (an
// order's placing, payment and expiry, the shop's clock inside each
// transaction) narrow when each took effect: the clients and the shop must
// share one clock, as on one machine.
package history

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Kind is what an operation did.
type Kind int

// The operations of a sale.
const (
	Buy       Kind = iota // a purchase of the goods
	Pay                   // a payment of an order
	ReadGoods             // a read of the goods' stock
	ReadOrder             // a read of an order's status
	Expire                // the sweeper's expiry of an order (from the final rows)
	FinalRows             // the final rows, read after everything: the stock and every order's status
	// Crash is the database's server killed (a process crash): what it
	// had shown but not yet made durable may be gone. InnoDB makes a
	// commit visible to other sessions before its redo log is written
	// (trx_commit_in_memory, then trx_flush_log_if_needed), so a read may
	// see a purchase that the crash then takes back, even at
	// innodb_flush_log_at_trx_commit=1; the purchase's buyer was never
	// told 200 (the COMMIT did not return), and no acknowledged commit is
	// lost. Recorded by the test that kills the server, from just before
	// the kill until the process is gone.
	Crash
)

func (k Kind) String() string {
	return [...]string{"buy", "pay", "read-goods", "read-order", "expire", "final", "crash"}[k]
}

// Result is how an operation ended, as the client heard it.
type Result int

// The results.
const (
	Unknown  Result = iota // no answer, or an answer that says the outcome is unknown
	OK                     // done: the order placed or paid, the value read
	SoldOut                // a purchase refused for want of stock
	Expired                // a payment refused: the order expired (or is past its deadline)
	NotFound               // a read of an order that does not exist
	Refused                // refused having done nothing (busy, lock_timeout, unavailable, ...)
)

func (r Result) String() string {
	return [...]string{"unknown", "ok", "sold-out", "expired", "not-found", "refused"}[r]
}

// Op is one operation of one client.
type Op struct {
	Client    int
	Kind      Kind
	Goods     int32
	RequestID string   // Buy: the purchase's X-Request-ID
	Order     uint64   // Buy OK: the order placed; Pay, ReadOrder: the order
	Expired   []uint64 // Expire: the orders one sweep's transaction expired
	Result    Result
	Stock     int32             // ReadGoods OK, FinalRows: the stock read
	Status    string            // ReadOrder OK: the status read (unpaid, paid, expired)
	Statuses  map[uint64]string // FinalRows: every order's status
	Call, Ret time.Time
}

func (o Op) String() string {
	switch o.Kind {
	case Buy:
		return fmt.Sprintf("client %d buy %s → %s order %d", o.Client, o.RequestID, o.Result, o.Order)
	case ReadGoods:
		return fmt.Sprintf("client %d read goods %d → %s stock %d", o.Client, o.Goods, o.Result, o.Stock)
	case ReadOrder:
		return fmt.Sprintf("client %d read order %d → %s %s", o.Client, o.Order, o.Result, o.Status)
	case Expire:
		return fmt.Sprintf("sweeper expire orders %v → %s", o.Expired, o.Result)
	case FinalRows:
		return fmt.Sprintf("final rows of goods %d: stock %d, %d orders", o.Goods, o.Stock, len(o.Statuses))
	case Crash:
		return "the database's server crashed"
	}
	return fmt.Sprintf("client %d %s order %d → %s", o.Client, o.Kind, o.Order, o.Result)
}

// Recorder collects the operations of a run; safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
}

// Add records op.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns the operations recorded so far, by call time.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	ops := append([]Op(nil), r.ops...)
	r.mu.Unlock()
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call.Before(ops[j].Call) })
	return ops
}

// Answer is what a client heard, as the harness's answers carry it.
type Answer struct {
	Status int
	Code   string
	Err    error // no answer at all
	// Ahead: a sold_out that names the buyers ahead of the buyer's place
	// in the waiting room, told before its turn: a forecast, not a read
	// of the stock (pieces may be left then); nothing was sold to it.
	Ahead bool
}

// BuyResult classifies a purchase's answer. The shop's contract: nothing is
// written unless it answers 200, except when it answers outcome_unknown;
// and without an answer the client cannot know. Every other answer —
// timeout (the buyer's X-Request-Timeout-Ms passed), busy, unavailable,
// lock_timeout, lock_lost, canceled, the 4xx refusals — is Refused, a
// promise that nothing happened: the checker finds an order that holds
// its request id illegal (complete).
func BuyResult(a Answer) Result {
	switch {
	case a.Err != nil || a.Code == "outcome_unknown":
		return Unknown
	case a.Status == http.StatusOK:
		return OK
	case a.Code == "sold_out" && !a.Ahead:
		return SoldOut
	}
	return Refused
}

// PayResult classifies a payment's answer.
func PayResult(a Answer) Result {
	switch {
	case a.Err != nil || a.Status >= 500:
		return Unknown // a payment has no outcome_unknown of its own: a 5xx may hide a commit
	case a.Status == http.StatusOK:
		return OK
	case a.Code == "order_expired":
		return Expired
	case a.Status == http.StatusNotFound:
		return NotFound
	}
	return Refused
}

// ReadResult classifies a read's answer: OK, NotFound, or Unknown for
// anything else (a failed read says nothing and is dropped).
func ReadResult(a Answer) Result {
	switch {
	case a.Err == nil && a.Status == http.StatusOK:
		return OK
	case a.Err == nil && a.Status == http.StatusNotFound:
		return NotFound
	}
	return Unknown
}
