package service

import (
	"context"
	"testing"
	"time"
)

// A grant that would leave a row nearly empty keeps back the pieces the
// buyers of other instances who arrived earlier wait for: it takes for its
// buyers whose turn, among those and its own in arrival order, falls
// within the stock.
// Without it (make bench-shop (k), allot with a busy loop on the shops'
// CPU) the fast instance's grant took the row's last pieces for its later
// arrivals while the slowed one's earlier ones still queued.
func TestAGrantKeepsBackWhatEarlierBuyersElsewhereWaitFor(t *testing.T) {
	t0 := time.Now()
	// A unit of time is a nanosecond.
	buyers := func(at ...time.Duration) []*waiter {
		var xs []*waiter
		for _, d := range at {
			xs = append(xs, newWaiter(context.Background(), &Order{GoodsNo: 1, Arrived: t0.Add(d)}))
		}
		return xs
	}
	elsewhere := Waiting{First: t0, Last: t0, N: 8}       // 8 buyers wait at another instance since t0
	spread := Waiting{First: t0, Last: t0.Add(10), N: 10} // 10 more, one every unit from t0
	cases := []struct {
		name   string
		stock  int32
		batch  []*waiter
		others map[int32]Waiting
		take   int32
		kept   bool
	}{
		{"nobody waits elsewhere", 10, buyers(1, 2, 3), nil, 3, false},
		{"all of the batch arrived later, the row just covers the others", 10, buyers(1, 2, 3), map[int32]Waiting{1: elsewhere}, 2, true},
		{"all of the batch arrived later, the row short of the others", 6, buyers(1, 2, 3), map[int32]Waiting{1: elsewhere}, 0, true},
		{"one of the batch arrived earlier", 6, buyers(-1, 2, 3), map[int32]Waiting{1: elsewhere}, 1, true},
		{"the row covers everyone", 20, buyers(1, 2, 3), map[int32]Waiting{1: elsewhere}, 3, false},
		// Turns 0 (+1 of theirs before), 1 (+3), 2 (+5): the first two within 6.
		{"the queues interleave", 6, buyers(1, 3, 5), map[int32]Waiting{1: spread}, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gs := &fakeGrant{stock: c.stock, waiting: c.others}
			a := &Allot{store: fakeGrantStore{gs}, held: map[int32]Allotment{}}
			want := map[int32]int32{1: int32(len(c.batch))}
			_, kept, err := a.grant(context.Background(), want, c.batch, t0)
			if err != nil {
				t.Fatal(err)
			}
			if gs.took[1] != c.take || kept[1] != c.kept {
				t.Errorf("stock %d, 3 buyers, others %v: took %d, kept back %v; want %d, %v", c.stock, c.others, gs.took[1], kept[1], c.take, c.kept)
			}
			if w := gs.wrote[1]; w.N != 3 || !w.First.Equal(c.batch[0].order.Arrived) {
				t.Errorf("the lease's row says %+v waits; want the batch's 3 buyers, the earliest at %v", w, c.batch[0].order.Arrived)
			}
		})
	}
}

type fakeGrantStore struct {
	gs *fakeGrant
}

func (f fakeGrantStore) BeginGrant(context.Context, int64, []int32) (GrantSale, error) {
	return f.gs, nil
}

// The rest of AllotStore is not called by grant.
func (fakeGrantStore) OpenLease(context.Context, string) (int64, error)     { panic("not called") }
func (fakeGrantStore) OpenLeases(context.Context) (map[int64]string, error) { panic("not called") }
func (fakeGrantStore) LeaseState(context.Context, int64) (map[int32]Allotment, bool, error) {
	panic("not called")
}
func (fakeGrantStore) ReturnAllotted(context.Context, int64, map[int32]Allotment, map[int32]int32) error {
	panic("not called")
}
func (fakeGrantStore) CloseLease(context.Context, int64) (int64, bool, error) { panic("not called") }
func (fakeGrantStore) BeginAllotted(context.Context, int64, map[int32]Allotment, map[int32]Goods, []int32, map[int32]Waiting) (BatchSale, error) {
	panic("not called")
}
func (fakeGrantStore) GoodsOf(context.Context, []int32) (map[int32]Goods, error) { panic("not called") }
func (fakeGrantStore) WantBack(context.Context, map[int64][]Ask) error           { panic("not called") }
func (fakeGrantStore) Wanted(context.Context, int64) ([]Ask, error)              { panic("not called") }

// fakeGrant is a grant of goods 1, whose row holds stock.
type fakeGrant struct {
	stock   int32
	waiting map[int32]Waiting
	took    map[int32]int32
	wrote   map[int32]Waiting
}

func (g *fakeGrant) Goods() map[int32]Goods { return map[int32]Goods{1: {GoodsNo: 1, Stock: g.stock}} }

func (g *fakeGrant) Take(_ context.Context, _ map[int32]Allotment, take map[int32]int32, _ bool, waiting map[int32]Waiting) (Grant, error) {
	g.took, g.wrote = take, waiting
	return Grant{Goods: g.Goods(), Granted: take}, nil
}

func (g *fakeGrant) Waiting(context.Context, time.Duration) (map[int32]Waiting, error) {
	return g.waiting, nil
}

func (g *fakeGrant) Abort(_ context.Context, err error) error { return err }
