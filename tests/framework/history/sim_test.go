package history

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"
	"time"
)

// A simulated sale on a lossy network: the partition suite's "5% loss on
// every link" in miniature, with the shop's rules and a linearizable
// history by construction (each operation takes effect at one instant
// between its call and its return). Used to measure how long the checker
// takes on such histories.

// simConfig is a simulated sale's numbers.
type simConfig struct {
	buyers     int
	every      time.Duration // between two buyers' arrivals
	stock      int32
	payTimeout time.Duration
	sweepEvery time.Duration
	loss       float64 // each packet's chance to be lost
}

// sim is the simulation's state: a clock, events, the shop's rows and the
// history recorded.
type sim struct {
	cfg    simConfig
	rnd    *rand.Rand
	now    time.Duration
	events simEvents
	seq    int

	stock    int32
	orders   map[uint64]*Row
	byBuyer  map[int]uint64
	lastID   uint64
	lockFree time.Duration // when the purchase lock is next free

	ops    []Op
	buying bool
}

type simEvent struct {
	at  time.Duration
	seq int
	fn  func()
}

type simEvents []simEvent

func (e simEvents) Len() int { return len(e) }
func (e simEvents) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e simEvents) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *simEvents) Push(x any)   { *e = append(*e, x.(simEvent)) }
func (e *simEvents) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

func (s *sim) at(d time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.events, simEvent{at: d, seq: s.seq, fn: fn})
}

func (s *sim) time(d time.Duration) time.Time { return t0.Add(d) }

// leg is one way of a request on the network: a packet or two, each lost
// with cfg.loss and sent again after TCP's retransmission timeout (200 ms,
// doubling).
func (s *sim) leg() time.Duration {
	d := 300 * time.Microsecond
	for range 2 {
		for rto := 200 * time.Millisecond; s.rnd.Float64() < s.cfg.loss; rto *= 2 {
			d += rto
		}
	}
	return d
}

// tx is a database transaction of n round trips from the shop.
func (s *sim) tx(n int) time.Duration {
	var d time.Duration
	for range n {
		d += s.leg() + s.leg()
	}
	return d
}

// simulate runs a sale and returns its history and the final rows.
func simulate(cfg simConfig, seed uint64) ([]Op, Final) {
	s := &sim{cfg: cfg, rnd: rand.New(rand.NewPCG(seed, 1)), stock: cfg.stock,
		orders: map[uint64]*Row{}, byBuyer: map[int]uint64{}, buying: true}
	for i := range cfg.buyers {
		s.at(time.Duration(i)*cfg.every, func() { s.buy(i) })
	}
	s.at(0, s.sweep)
	s.at(0, func() { s.read(0) })
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(simEvent)
		s.now = e.at
		e.fn()
	}
	final := Final{Stock: map[int32]int32{1: s.stock}}
	for id := uint64(1); id <= s.lastID; id++ {
		final.Orders = append(final.Orders, *s.orders[id])
	}
	return s.ops, final
}

// buy is buyer i's purchase: to the shop, behind the lock, a transaction,
// the answer back; every other buyer then pays.
func (s *sim) buy(i int) {
	call := s.now
	rid := fmt.Sprintf("b%d", i)
	arrive := call + s.leg()
	start := max(arrive, s.lockFree) + s.tx(1) // the lock's round trip
	commit := start + s.tx(4)
	s.lockFree = commit + s.tx(1)
	s.at(commit, func() {
		op := Op{Client: i, Kind: Buy, Goods: 1, RequestID: rid, Result: SoldOut, Call: s.time(call)}
		if s.stock > 0 {
			s.stock--
			s.lastID++
			s.orders[s.lastID] = &Row{ID: s.lastID, Goods: 1, RequestID: rid, Status: "unpaid", CreatedAt: s.time(start)}
			op.Result, op.Order = OK, s.lastID
		}
		ret := commit + s.leg()
		op.Ret = s.time(ret)
		s.ops = append(s.ops, op)
		if op.Result == OK && i%2 == 0 {
			s.at(ret, func() { s.pay(i, op.Order) })
		}
		if i == s.cfg.buyers-1 {
			s.at(ret, func() { s.buying = false })
		}
	})
}

// pay is buyer i's payment of order id.
func (s *sim) pay(i int, id uint64) {
	call := s.now
	start := call + s.leg()
	commit := start + s.tx(3)
	s.at(commit, func() {
		o := s.orders[id]
		op := Op{Client: i, Kind: Pay, Order: id, Result: Expired, Call: s.time(call), Ret: s.time(commit + s.leg())}
		if o.Status == "paid" || o.Status == "unpaid" && s.time(start).Sub(o.CreatedAt) < s.cfg.payTimeout {
			op.Result = OK
			if o.Status != "paid" {
				o.Status, o.PaidAt = "paid", ptr(s.time(start))
			}
		}
		s.ops = append(s.ops, op)
	})
}

// sweep is one of the sweeper's sweeps, the next one after it.
func (s *sim) sweep() {
	start := s.now
	commit := start + s.tx(3)
	s.at(commit, func() {
		expired := 0
		for id := uint64(1); id <= s.lastID; id++ {
			o := s.orders[id]
			if o.Status == "unpaid" && s.time(start).Sub(o.CreatedAt) >= s.cfg.payTimeout {
				o.Status, o.ExpiredAt = "expired", ptr(s.time(start))
				s.stock++
				expired++
			}
		}
		end := commit + s.leg()
		if s.buying || expired > 0 {
			s.at(max(end, start+s.cfg.sweepEvery), s.sweep)
		}
	})
}

// read is the reader's i-th read, every 50 ms while buyers buy: the goods
// and the latest order in turn; reads slower than a second are left out,
// as the partition suite leaves them.
func (s *sim) read(i int) {
	if !s.buying {
		return
	}
	call := s.now
	lin := call + s.leg() + s.tx(1)/2
	s.at(lin, func() {
		op := Op{Client: s.cfg.buyers, Kind: ReadGoods, Goods: 1, Result: OK, Stock: s.stock, Call: s.time(call)}
		if i%2 == 1 && s.lastID > 0 {
			op = Op{Client: s.cfg.buyers + 1, Kind: ReadOrder, Order: s.lastID, Result: OK, Status: s.orders[s.lastID].Status, Call: s.time(call)}
		}
		ret := lin + s.leg()
		op.Ret = s.time(ret)
		if ret-call <= time.Second {
			s.ops = append(s.ops, op)
		}
		s.at(ret+50*time.Millisecond, func() { s.read(i + 1) })
	})
}

func ptr[T any](v T) *T { return &v }

// The histories of sales on a lossy network are decided, and quickly:
// each legal one legal, and each with one wrong answer put in (a read of
// the stock that no state had, a sold-out told while a piece was left)
// illegal. Porcupine's search left some of the legal ones at 5% loss
// undecided after minutes (see linearize.go); the generous timeout is not
// a measure of speed, it only tells undecided from decided.
func TestLossyHistoriesAreDecided(t *testing.T) {
	for _, loss := range []float64{0.05, 0.10} {
		cfg := simConfig{buyers: 120, every: 100 * time.Millisecond, stock: 40, payTimeout: 2 * time.Second,
			sweepEvery: 200 * time.Millisecond, loss: loss}
		for seed := uint64(1); seed <= 10; seed++ {
			ops, final := simulate(cfg, seed)
			initial := map[int32]int32{1: cfg.stock}
			if r := Check(ops, initial, final, time.Minute, ""); !r.Legal {
				t.Errorf("loss %v seed %d: a legal history of %d operations judged %q", loss, seed, r.Ops, r.Problems)
			}
			for _, wrong := range []struct {
				name string
				op   func([]Op) []Op
			}{
				{"a read of a stock above the initial", func(ops []Op) []Op { return readAbove(ops, cfg.stock) }},
				{"a sold-out while a piece was left", soldOutTooEarly},
			} {
				r := Check(wrong.op(slices.Clone(ops)), initial, final, time.Minute, "")
				if r.Legal || r.Undecided {
					t.Errorf("loss %v seed %d, %s: judged legal %v, undecided %v", loss, seed, wrong.name, r.Legal, r.Undecided)
				}
			}
		}
	}
}

// readAbove makes the middle read of the stock read one more than the
// initial stock: no state had it.
func readAbove(ops []Op, stock int32) []Op {
	var reads []int
	for i, o := range ops {
		if o.Kind == ReadGoods {
			reads = append(reads, i)
		}
	}
	ops[reads[len(reads)/2]].Stock = stock + 1
	return ops
}

// soldOutTooEarly adds a purchase answered sold out early in the sale,
// when the stock was full: one more buyer, who left no order.
func soldOutTooEarly(ops []Op) []Op {
	return append(ops, Op{Client: 1000, Kind: Buy, Goods: 1, RequestID: "early", Result: SoldOut,
		Call: ops[0].Call.Add(time.Millisecond), Ret: ops[0].Call.Add(20 * time.Millisecond)})
}

// The search agrees with porcupine's on small histories, which porcupine
// decides in time: sales of a dozen buyers on a lossy network, each with
// one answer changed at random (a read's stock, a purchase's or a
// payment's result), legal or not as it happens.
func TestTheSearchAgreesWithPorcupine(t *testing.T) {
	cfg := simConfig{buyers: 12, every: 100 * time.Millisecond, stock: 4, payTimeout: 500 * time.Millisecond,
		sweepEvery: 100 * time.Millisecond, loss: 0.2}
	legal, illegal := 0, 0
	for seed := uint64(1); seed <= 300; seed++ {
		ops, final := simulate(cfg, seed)
		rnd := rand.New(rand.NewPCG(seed, 2))
		i := rnd.IntN(len(ops))
		switch ops[i].Kind {
		case ReadGoods:
			ops[i].Stock += int32(rnd.IntN(3)) - 1
		case Buy, Pay:
			ops[i].Result = []Result{OK, SoldOut, Expired}[rnd.IntN(3)]
		}
		var r Report
		byGoods := complete(ops, final, &r)
		if len(r.Problems) > 0 {
			continue // the rows contradict it: no search needed
		}
		h := byGoods[1]
		n := indexOrders(h)
		ours := check(h, cfg.stock, n, time.Minute)
		theirs := porcupine.CheckOperationsTimeout(model(cfg.stock, n), h, time.Minute)
		if theirs == porcupine.Unknown {
			t.Fatalf("seed %d: porcupine did not decide", seed)
		}
		if (ours == linearizable) != (theirs == porcupine.Ok) || ours == timedOut {
			t.Errorf("seed %d: the search says %v, porcupine %v", seed, ours, theirs)
		}
		if ours == linearizable {
			legal++
		} else {
			illegal++
		}
	}
	t.Logf("%d legal, %d illegal", legal, illegal)
	if legal < 50 || illegal < 50 {
		t.Errorf("%d legal, %d illegal histories: too few of one kind to compare", legal, illegal)
	}
}

// Purchases cut off by a crash of the database's server may each have
// taken a piece that the crash gave back: thousands of them, in a sale
// whose server was split off for seconds before the crash. Each forked
// the model's state once, and the search then stepped thousands of states
// of tens of thousands of orders each: a Galera split-then-crash history
// of 30 562 operations with 1 040 such purchases took 14 s, and over the
// checker's minute on a busy machine. One state stands for them all now
// (a state's spread), and the search is never in more than a few states.
func TestCutOffPurchasesDoNotMultiplyTheStates(t *testing.T) {
	cfg := simConfig{buyers: 2000, every: 3 * time.Millisecond, stock: 1_000_000, payTimeout: time.Minute,
		sweepEvery: time.Second}
	ops, final := simulate(cfg, 1)
	end := ops[len(ops)-1].Ret
	for i := range 4000 { // 50 buyers retrying every 10 ms for 4 s, each refused
		call := end.Add(-4*time.Second + time.Duration(i)*time.Millisecond)
		ops = append(ops, Op{Client: cfg.buyers + 2 + i%50, Kind: Buy, Goods: 1, RequestID: fmt.Sprintf("cut-%d", i), Result: Refused,
			Call: call, Ret: call.Add(5 * time.Millisecond)})
	}
	ops = append(ops, Op{Kind: Crash, Call: end, Ret: end.Add(time.Millisecond)})
	var r Report
	h := complete(ops, final, &r)[1]
	n := indexOrders(h)
	mops := make([]modelOp, len(h))
	calls, rets := make([]int64, len(h)), make([]int64, len(h))
	for i, o := range h {
		mops[i], calls[i], rets[i] = o.Input.(modelOp), o.Call, o.Return
	}
	v, widest := linearizeWidth(mops, calls, rets, start(cfg.stock, n), time.Now().Add(time.Minute))
	if v != linearizable || widest > 4 {
		t.Errorf("%d operations: %v, in at most %d states at once; want linearizable, in at most 4", len(h), v, widest)
	}
}
