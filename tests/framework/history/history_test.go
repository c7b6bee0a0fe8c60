package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// at is a time t milliseconds into a hand-made history.
var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func buy(client int, rid string, call, ret int, res Result, order uint64) Op {
	return Op{Client: client, Kind: Buy, Goods: 1, RequestID: rid, Result: res, Order: order, Call: at(call), Ret: at(ret)}
}

func pay(client int, order uint64, call, ret int, res Result) Op {
	return Op{Client: client, Kind: Pay, Order: order, Result: res, Call: at(call), Ret: at(ret)}
}

func readGoods(client int, call, ret int, stock int32) Op {
	return Op{Client: client, Kind: ReadGoods, Goods: 1, Result: OK, Stock: stock, Call: at(call), Ret: at(ret)}
}

func readOrder(client int, order uint64, call, ret int, status string) Op {
	return Op{Client: client, Kind: ReadOrder, Order: order, Result: OK, Status: status, Call: at(call), Ret: at(ret)}
}

func crash(call, ret int) Op { return Op{Kind: Crash, Call: at(call), Ret: at(ret)} }

func row(id uint64, rid, status string, expiredAt ...int) Row {
	r := Row{ID: id, Goods: 1, RequestID: rid, Status: status}
	if len(expiredAt) > 0 {
		e := at(expiredAt[0])
		r.ExpiredAt = &e
	}
	return r
}

// The checker judges hand-made histories of a goods with stock 2: each
// legal one legal, each wrong one wrong, and writes the failing one's
// visualisation.
func TestTheCheckerJudgesHandMadeHistories(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ops   []Op
		final Final
		legal bool
		want  string // a part of a problem, for the illegal ones
	}{
		{
			name: "legal: two sold, one sold out, one paid, one expired and its piece sold again",
			ops: []Op{
				buy(0, "a", 0, 10, OK, 1), buy(1, "b", 5, 15, OK, 2), buy(2, "c", 20, 25, SoldOut, 0),
				pay(0, 1, 30, 35, OK), readOrder(0, 1, 40, 45, "paid"),
				readGoods(3, 110, 115, 1), buy(3, "d", 120, 130, OK, 3), readOrder(1, 2, 140, 145, "expired"),
			},
			final: Final{Stock: map[int32]int32{1: 0}, Orders: []Row{row(1, "a", "paid"), row(2, "b", "expired", 100), row(3, "d", "unpaid")}},
			legal: true,
		},
		{
			name:  "legal: an order expired after the last answer",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), readGoods(1, 20, 30, 1)},
			final: Final{Stock: map[int32]int32{1: 2}, Orders: []Row{row(1, "a", "expired", 500)}},
			legal: true,
		},
		{
			name:  "an oversell: three sold of two",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), buy(1, "b", 0, 10, OK, 2), buy(2, "c", 0, 10, OK, 3)},
			final: Final{Stock: map[int32]int32{1: -1}, Orders: []Row{row(1, "a", "unpaid"), row(2, "b", "unpaid"), row(3, "c", "unpaid")}},
			want:  "not linearizable",
		},
		{
			name:  "sold out while a piece was free",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), buy(1, "b", 20, 30, SoldOut, 0)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "unpaid")}},
			want:  "not linearizable",
		},
		{
			name:  "a stale read: the stock before a purchase that had returned",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), readGoods(1, 20, 30, 2)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "unpaid")}},
			want:  "not linearizable",
		},
		{
			name:  "an order stamped after its buyer heard 200",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), readGoods(1, 12, 14, 2)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{func() Row { r := row(1, "a", "unpaid"); r.CreatedAt = at(13); return r }()}},
			want:  "the shop's clock ran ahead",
		},
		{
			name:  "an order paid and expired both",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), pay(0, 1, 20, 30, OK)},
			final: Final{Stock: map[int32]int32{1: 2}, Orders: []Row{row(1, "a", "expired", 25)}},
			want:  "but the order is expired",
		},
		{
			name:  "an order read expired, then paid",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), readOrder(1, 1, 40, 50, "expired"), pay(0, 1, 60, 70, OK)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "paid")}},
			want:  "not linearizable",
		},
		{
			name:  "a buy of unknown outcome that happened",
			ops:   []Op{buy(0, "a", 0, 10, Unknown, 0), buy(1, "b", 20, 30, OK, 2), buy(2, "c", 40, 50, SoldOut, 0)},
			final: Final{Stock: map[int32]int32{1: 0}, Orders: []Row{row(1, "a", "unpaid"), row(2, "b", "unpaid")}},
			legal: true,
		},
		{
			name:  "a buy of unknown outcome that did not happen",
			ops:   []Op{buy(0, "a", 0, 10, Unknown, 0), buy(1, "b", 20, 30, OK, 2), readGoods(2, 40, 50, 1)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(2, "b", "unpaid")}},
			legal: true,
		},
		{
			name:  "a buy of unknown outcome cannot explain a sold out after it",
			ops:   []Op{buy(0, "a", 0, 10, Unknown, 0), buy(1, "b", 20, 30, OK, 2), buy(2, "c", 40, 50, SoldOut, 0)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(2, "b", "unpaid")}},
			want:  "not linearizable",
		},
		{
			name:  "a payment of unknown outcome that happened",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), pay(0, 1, 20, 30, Unknown)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "paid")}},
			legal: true,
		},
		{
			name:  "a payment of unknown outcome that did not happen",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), pay(0, 1, 20, 30, Unknown), readOrder(1, 1, 40, 50, "unpaid")},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "unpaid")}},
			legal: true,
		},
		{
			name:  "a refused purchase that wrote its order",
			ops:   []Op{buy(0, "a", 0, 10, Refused, 0)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "unpaid")}},
			want:  "yet order 1 holds its request id",
		},
		{
			name: "legal: a purchase seen, then taken back by a crash of the database",
			ops: []Op{
				buy(0, "a", 0, 10, OK, 1), buy(1, "b", 20, 100, Refused, 0), readGoods(2, 30, 40, 0),
				crash(50, 60), readGoods(2, 70, 80, 1),
			},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "unpaid")}},
			legal: true,
		},
		{
			name: "a purchase seen, then gone, without a crash",
			ops: []Op{
				buy(0, "a", 0, 10, OK, 1), buy(1, "b", 20, 100, Refused, 0), readGoods(2, 30, 40, 0),
				readGoods(2, 70, 80, 1),
			},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "unpaid")}},
			want:  "not linearizable",
		},
		{
			name: "a purchase that left no order seen after the crash",
			ops: []Op{
				buy(0, "a", 0, 10, OK, 1), buy(1, "b", 20, 100, Unknown, 0), crash(30, 40),
				readGoods(2, 50, 60, 0), readGoods(2, 110, 120, 1),
			},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "unpaid")}},
			want:  "not linearizable",
		},
		{
			name:  "an acknowledged purchase lost in a crash",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), crash(20, 30), readGoods(2, 40, 50, 2)},
			final: Final{Stock: map[int32]int32{1: 2}},
			want:  "but no order row holds it",
		},
		{
			name:  "a payment refused expired, then paid",
			ops:   []Op{buy(0, "a", 0, 10, OK, 1), pay(0, 1, 20, 30, Expired), pay(0, 1, 40, 50, OK)},
			final: Final{Stock: map[int32]int32{1: 1}, Orders: []Row{row(1, "a", "paid")}},
			want:  "not linearizable",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := Check(tc.ops, map[int32]int32{1: 2}, tc.final, 10*time.Second, dir)
			if r.Legal != tc.legal {
				t.Fatalf("judged legal %v, want %v: %q", r.Legal, tc.legal, r.Problems)
			}
			if tc.legal {
				return
			}
			if !strings.Contains(strings.Join(r.Problems, "\n"), tc.want) {
				t.Errorf("problems %q, want one saying %q", r.Problems, tc.want)
			}
			if tc.want == "not linearizable" {
				if len(r.HTML) != 1 {
					t.Fatalf("visualisations %v, want one", r.HTML)
				}
				b, err := os.ReadFile(r.HTML[0])
				if err != nil || !strings.Contains(string(b), "<html") || filepath.Dir(r.HTML[0]) != dir {
					t.Errorf("the visualisation %s: %v, %d bytes", r.HTML[0], err, len(b))
				}
			}
		})
	}
}

// The answers that promise nothing happened are refusals, which the checker
// holds to it; outcome_unknown and no answer leave it to the rows.
func TestBuyResultKeepsTheNothingHappenedAnswersToTheirPromise(t *testing.T) {
	for _, code := range []string{"timeout", "busy", "unavailable", "lock_timeout", "lock_lost", "canceled"} {
		if got := BuyResult(Answer{Status: 503, Code: code}); got != Refused {
			t.Errorf("503 %s is %v, want %v", code, got, Refused)
		}
	}
	for _, a := range []Answer{{Status: 503, Code: "outcome_unknown"}, {Err: os.ErrDeadlineExceeded}} {
		if got := BuyResult(a); got != Unknown {
			t.Errorf("%+v is %v, want %v", a, got, Unknown)
		}
	}
}

// A history whose fault shows only in the final rows — here a stock one
// piece too high after forty sales — is decided, not left "unknown": the
// final rows are one operation, not one a row (forty reads at one time
// would let the checker try every subset of them before saying no).
func TestAWrongEndIsDecidedWhateverTheNumberOfOrders(t *testing.T) {
	const n = 40
	var ops []Op
	final := Final{Stock: map[int32]int32{1: 50 - n + 1}}
	for i := 1; i <= n; i++ {
		rid := "r" + strings.Repeat("x", i)
		ops = append(ops, buy(i, rid, 10*i, 10*i+5, OK, uint64(i)))
		final.Orders = append(final.Orders, row(uint64(i), rid, "unpaid"))
	}
	r := Check(ops, map[int32]int32{1: 50}, final, 30*time.Second, "")
	if r.Legal || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "not linearizable") {
		t.Fatalf("judged legal %v, problems %q: want one, not linearizable", r.Legal, r.Problems)
	}
}
