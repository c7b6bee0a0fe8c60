package history

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Row is an order_info row as the sale left it.
type Row struct {
	ID        uint64
	Goods     int32
	RequestID string
	Status    string
	// CreatedAt and PaidAt are the shop's clock as the sale and the
	// payment read it, inside their transactions: each committed after.
	CreatedAt time.Time
	PaidAt    *time.Time
	ExpiredAt *time.Time
}

// slack is how much earlier than the time a row records its transaction
// may have taken effect: none, the clock being read inside it; a
// millisecond for the database's rounding.
const slack = time.Millisecond

// notBefore moves an operation's call to t less slack when that is later:
// the operation took effect when its transaction committed, after t. The
// narrower windows spare the checker the orders of many purchases that
// waited together (every subset of them, otherwise, to match a read of the
// stock).
func notBefore(o *Op, t time.Time) {
	if t = t.Add(-slack); t.After(o.Call) && t.Before(o.Ret) {
		o.Call = t
	}
}

// stampedAfter reports a row's time (what) later than the answer to o:
// the shop stamped it with a clock ahead of the test's. The instances and
// the test share one machine's clock, and each instance goes by MySQL's,
// measured; a stamp after its answer is a measurement gone wrong, and
// notBefore would then narrow o to after its real time.
func stampedAfter(r *Report, o Op, what string, stamp time.Time) {
	if stamp.Add(-slack).After(o.Ret) {
		r.Problems = append(r.Problems, fmt.Sprintf("%v, but the order was %s at %s, %v after that answer: the shop's clock ran ahead",
			o, what, stamp.Format("15:04:05.000000"), stamp.Sub(o.Ret).Round(time.Microsecond)))
	}
}

// Final is the database after the sale: each goods' stock and every order.
type Final struct {
	Stock  map[int32]int32
	Orders []Row
}

// Report is the checker's verdict on a history.
type Report struct {
	Ops   int  // operations checked (the final rows' included)
	Legal bool // every goods' history is linearizable
	// Undecided: not Legal only because the checker ran out of time on a
	// history; nothing was found illegal.
	Undecided bool
	Took      time.Duration // the checker's time
	Problems  []string      // what is wrong, for a person
	HTML      []string      // porcupine's visualisations of the failing histories
}

// Check completes ops with the final rows and checks each goods' history
// against the model, starting from its initial stock. Each goods' check
// gets timeout (porcupine's answer "unknown" counts as a failure). A
// failing goods' history is written as porcupine's HTML visualisation into
// htmlDir (made if missing) when htmlDir is not "".
func Check(ops []Op, initial map[int32]int32, final Final, timeout time.Duration, htmlDir string) Report {
	start := time.Now()
	var r Report
	byGoods := complete(ops, final, &r)
	if len(r.Problems) > 0 {
		// The rows already contradict an answer (an acknowledged order
		// lost, say): the history is not legal, and porcupine, which must
		// exhaust every order of the operations to say so, gets less time.
		timeout = min(timeout, 5*time.Second)
	}
	goods := make([]int32, 0, len(initial))
	for g := range initial {
		goods = append(goods, g)
	}
	slices.Sort(goods)
	r.Legal = true
	undecided := 0
	for _, g := range goods {
		h, n := byGoods[g], indexOrders(byGoods[g])
		r.Ops += len(h)
		res := check(h, initial[g], n, timeout)
		if res == linearizable {
			continue
		}
		r.Legal = false
		what := "not linearizable"
		if res == timedOut {
			what = fmt.Sprintf("not decided within %v", timeout)
			undecided++
		}
		r.Problems = append(r.Problems, fmt.Sprintf("goods %d: the history of %d operations is %s", g, len(h), what))
		if htmlDir != "" {
			r.HTML = append(r.HTML, visualize(htmlDir, g, h, initial[g], n)...)
		}
	}
	if len(r.Problems) > 0 {
		r.Legal = false
	}
	// Each undecided goods made one problem: any other problem is a
	// verdict, and the history is then illegal, not undecided.
	r.Undecided = undecided > 0 && undecided == len(r.Problems)
	r.Took = time.Since(start)
	return r
}

// check searches for a linearization of a goods' history h, of n orders,
// from its initial stock.
func check(h []porcupine.Operation, stock int32, n int, timeout time.Duration) verdict {
	ops := make([]modelOp, len(h))
	calls, rets := make([]int64, len(h)), make([]int64, len(h))
	for i, o := range h {
		ops[i], calls[i], rets[i] = o.Input.(modelOp), o.Call, o.Return
	}
	return linearize(ops, calls, rets, start(stock, n), time.Now().Add(timeout))
}

// visualize writes a failing goods' history: porcupine's visualisation
// (from porcupine's own search, given a few seconds: the longest prefixes
// it could place) and the operations as text. It returns the HTML's path.
func visualize(dir string, g int32, h []porcupine.Operation, stock int32, n int) []string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil
	}
	writeOps(filepath.Join(dir, fmt.Sprintf("goods-%d.txt", g)), h)
	m := model(stock, n)
	_, info := porcupine.CheckOperationsVerbose(m, h, 5*time.Second)
	p := filepath.Join(dir, fmt.Sprintf("goods-%d.html", g))
	if err := porcupine.VisualizePath(m, info, p); err != nil {
		return nil
	}
	return []string{p}
}

// complete turns the recorded ops into porcupine's, per goods: outcomes the
// clients never learned are settled with the final rows where they can be
// (a purchase whose order exists happened, at some time until the end), a
// payment of unknown outcome is left to the model to fork, refusals and
// failed reads are dropped (they did nothing), every expiry is added, and
// the final stock and each order's final status are read at the end.
// Answers the rows contradict outright go to r.Problems.
func complete(ops []Op, final Final, r *Report) map[int32][]porcupine.Operation {
	var end time.Time
	clients := 0
	for _, o := range ops {
		if o.Ret.After(end) {
			end = o.Ret
		}
		clients = max(clients, o.Client+1)
	}
	// The end is after the rows' times too: the sweeper may expire an
	// order after the last answer, and an expiry's call after its return
	// would be no history at all (porcupine judges it wrong).
	for _, row := range final.Orders {
		for _, t := range []*time.Time{&row.CreatedAt, row.PaidAt, row.ExpiredAt} {
			if t != nil && t.After(end) {
				end = *t
			}
		}
	}
	end = end.Add(time.Millisecond)
	byRequest := map[string]Row{}
	for _, row := range final.Orders {
		byRequest[row.RequestID] = row
	}
	out := map[int32][]porcupine.Operation{}
	add := func(o Op) {
		if o.Ret.Before(o.Call) {
			r.Problems = append(r.Problems, fmt.Sprintf("%v returned before its call: no history", o))
			return
		}
		out[o.Goods] = append(out[o.Goods], porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call.UnixNano(), Return: o.Ret.UnixNano()})
	}
	orderGoods, byID := map[uint64]int32{}, map[uint64]Row{}
	for _, row := range final.Orders {
		orderGoods[row.ID] = row.Goods
		byID[row.ID] = row
	}
	// After a crash of the database's server, a purchase that left no
	// order may still have been seen before the crash took it back (see
	// Crash): one that was asked before the last crash ended and was not
	// answered 200 goes to the model as Unknown, which may decrement the
	// stock until a crash.
	var crashes []Op
	for _, o := range ops {
		if o.Kind == Crash {
			crashes = append(crashes, o)
		}
	}
	seenThenLost := func(o Op) bool {
		return len(crashes) > 0 && o.Call.Before(crashes[len(crashes)-1].Ret)
	}
	for _, o := range ops {
		switch o.Kind {
		case Crash:
			continue // added to every goods' history below
		case Buy:
			row, exists := byRequest[o.RequestID]
			switch o.Result {
			case Unknown:
				if !exists && !seenThenLost(o) {
					continue // did nothing
				}
				if !exists {
					break // did nothing in the end; the model decides whether it was seen
				}
				o.Result, o.Order, o.Ret = OK, row.ID, end
				notBefore(&o, row.CreatedAt)
			case Refused, SoldOut:
				if exists {
					r.Problems = append(r.Problems, fmt.Sprintf("%v, yet order %d holds its request id", o, row.ID))
				}
				if o.Result == Refused && !exists && seenThenLost(o) {
					o.Result = Unknown
				} else if o.Result == Refused {
					continue
				}
			case OK:
				if !exists || row.ID != o.Order {
					r.Problems = append(r.Problems, fmt.Sprintf("%v, but no order row holds it", o))
				} else {
					stampedAfter(r, o, "placed", row.CreatedAt)
					notBefore(&o, row.CreatedAt)
				}
			}
		case Pay:
			row, exists := byID[o.Order]
			switch o.Result {
			case Unknown:
				// Settled by the row, as a purchase is: paid in the end,
				// this payment may have been it (or one of several that
				// were; paying a paid order changes nothing), at some time
				// until the end; not paid, it did nothing. Left to the
				// model's fork, fifty payments cut off by a crash would
				// make 2^50 states.
				if !exists || row.Status != "paid" {
					continue
				}
				o.Result, o.Ret = OK, end
			case Refused:
				continue
			}
			if exists {
				o.Goods = row.Goods
			}
			if exists && o.Result == OK && row.Status != "paid" {
				r.Problems = append(r.Problems, fmt.Sprintf("%v, but the order is %s", o, row.Status))
			}
			if exists && o.Result == OK && row.PaidAt != nil {
				stampedAfter(r, o, "paid", *row.PaidAt) // an Unknown one's return is the end, after every stamp
				notBefore(&o, *row.PaidAt)
			}
		case ReadGoods, ReadOrder:
			if o.Result == Unknown {
				continue
			}
			if g, ok := orderGoods[o.Order]; ok && o.Kind == ReadOrder {
				o.Goods = g
			}
		}
		add(o)
	}
	// A sweep expires its orders in one transaction, with one time: one
	// operation per goods and sweep, at one point (as many operations
	// would let the checker try every order of them).
	type sweep struct {
		goods int32
		at    time.Time
	}
	sweeps := map[sweep][]uint64{}
	var order []sweep
	for _, row := range final.Orders {
		if row.Status == "expired" && row.ExpiredAt != nil {
			k := sweep{row.Goods, *row.ExpiredAt}
			if _, ok := sweeps[k]; !ok {
				order = append(order, k)
			}
			sweeps[k] = append(sweeps[k], row.ID)
		}
	}
	for _, k := range order {
		add(Op{Client: clients, Kind: Expire, Goods: k.goods, Expired: sweeps[k], Result: OK, Call: k.at.Add(-time.Millisecond), Ret: end})
	}
	for _, c := range crashes {
		for g := range final.Stock {
			c.Client, c.Goods, c.Result = clients+2, g, OK
			add(c)
		}
	}
	// The final rows, one operation a goods after everything: as one a row
	// at one time they would let the checker try every subset of them
	// before it could say that a history ends wrong.
	statuses := map[int32]map[uint64]string{}
	for g := range final.Stock {
		statuses[g] = map[uint64]string{}
	}
	for _, row := range final.Orders {
		if statuses[row.Goods] == nil {
			statuses[row.Goods] = map[uint64]string{}
		}
		statuses[row.Goods][row.ID] = row.Status
	}
	for g, st := range statuses {
		add(Op{Client: clients + 1, Kind: FinalRows, Goods: g, Result: OK, Stock: final.Stock[g], Statuses: st,
			Call: end.Add(time.Millisecond), Ret: end.Add(2 * time.Millisecond)})
	}
	return out
}

// indexOrders gives each order of a goods' history an index into the
// model's state and returns how many there are.
func indexOrders(h []porcupine.Operation) int {
	idx := map[uint64]int{}
	for i := range h {
		o := h[i].Input.(Op)
		of := func(order uint64) int {
			n, ok := idx[order]
			if !ok {
				n = len(idx)
				idx[order] = n
			}
			return n
		}
		mo := modelOp{Op: o, idx: -1}
		if o.Order != 0 {
			mo.idx = of(o.Order)
		}
		for _, e := range o.Expired {
			mo.idxs = append(mo.idxs, of(e))
		}
		if o.Kind == FinalRows {
			mo.final = map[int]string{}
			for order, status := range o.Statuses {
				mo.final[of(order)] = status
			}
		}
		h[i].Input = mo
	}
	return len(idx)
}

// writeOps writes a goods' completed history as text, an operation a line
// by call time (times in ms from the first call), beside its
// visualisation: for grep and for a person.
func writeOps(path string, h []porcupine.Operation) {
	ops := slices.Clone(h)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var b strings.Builder
	for _, o := range ops {
		fmt.Fprintf(&b, "%10.3f %10.3f  %v\n", float64(o.Call-ops[0].Call)/1e6, float64(o.Return-ops[0].Call)/1e6, o.Input.(modelOp).Op)
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
}
