package service_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// stepSale records the steps RunBatch takes on a sale, in order, into log.
type stepSale struct {
	log   *[]string
	first bool // took its orders first
	goods map[int32]service.Goods
	sell  error           // Sell's and SellAndCommit's answer
	used  map[string]bool // request ids that hold an order, told when looked up
}

func (s *stepSale) step(format string, a ...any) { *s.log = append(*s.log, fmt.Sprintf(format, a...)) }

func (s *stepSale) Goods() map[int32]service.Goods { return s.goods }
func (s *stepSale) OrdersFirst() bool              { return s.first }

func (s *stepSale) Facts(_ context.Context, orders []*service.Order, lookUp bool) (service.Facts, error) {
	s.step("facts %d lookUp=%v", len(orders), lookUp)
	f := service.Facts{Orders: orders, Goods: s.goods, Used: map[service.RequestKey]bool{}}
	for _, o := range orders {
		if lookUp && s.used[o.RequestID] {
			f.Used[o.Key()] = true
		}
	}
	return f, nil
}

func (s *stepSale) Sell(context.Context, map[int32][]*service.Order) error {
	s.step("sell")
	return s.sell
}

func (s *stepSale) SellAndCommit(context.Context, map[int32][]*service.Order) error {
	s.step("sell+commit")
	return s.sell
}

func (s *stepSale) Commit(context.Context) error { s.step("commit"); return nil }

func (s *stepSale) Abort(_ context.Context, err error) error {
	s.step("abort")
	return err
}

// RunBatch's order of steps: the guard before the writes, and the COMMIT
// with them, when no order can collide; after them otherwise; late buyers
// only into a sale that took its orders first; one retry, with the request
// ids looked up, after an INSERT found one taken.
func TestRunBatchTakesItsStepsInOrder(t *testing.T) {
	newOrders := func(n int, ownIDs bool) []*service.Order {
		var out []*service.Order
		for i := range n {
			out = append(out, &service.Order{GoodsNo: 1, RequestID: fmt.Sprint("r", i), NewRequestID: !ownIDs})
		}
		return out
	}
	sellAll := func(f service.Facts) (map[int32][]*service.Order, error) {
		c, _ := service.SortBuyers(f)
		return c, nil
	}
	for _, tc := range []struct {
		name   string
		orders []*service.Order
		takes  bool  // the store takes orders first
		sell   error // the first sale's write fails so
		want   string
	}{
		{"nothing can collide, orders first", newOrders(2, false), true, nil,
			"begin first=2; join; facts 3 lookUp=false; guard; sell+commit"},
		{"nothing can collide, a store that does not take orders first", newOrders(2, false), false, nil,
			"begin first=2; facts 2 lookUp=false; guard; sell+commit"},
		{"a buyer's own request id", newOrders(2, true), true, nil,
			"begin first=0; facts 2 lookUp=false; sell; guard; commit"},
		{"a request id found taken", newOrders(2, true), true, service.ErrDuplicateRequest,
			"begin first=0; facts 2 lookUp=false; sell; abort; begin first=0; facts 2 lookUp=true; sell; guard; commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			attempt := 0
			begin := func(_ context.Context, goods []int32, first []*service.Order) (service.BatchSale, error) {
				log = append(log, fmt.Sprintf("begin first=%d", len(first)))
				s := &stepSale{log: &log, first: tc.takes && len(first) > 0, goods: map[int32]service.Goods{1: {GoodsNo: 1, Stock: 10}},
					used: map[string]bool{"r0": true}}
				if attempt == 0 {
					s.sell = tc.sell
				}
				attempt++
				if !slices.Equal(goods, []int32{1}) {
					t.Errorf("begun with goods %v, want [1]", goods)
				}
				return s, nil
			}
			join := func(accept func(*service.Order) bool) []*service.Order {
				log = append(log, "join")
				late := &service.Order{GoodsNo: 1, RequestID: "late", NewRequestID: true}
				other := &service.Order{GoodsNo: 2, RequestID: "other goods", NewRequestID: true}
				if !accept(late) || accept(other) {
					t.Errorf("join accepts a buyer of the claimed goods %v, of another %v", accept(late), accept(other))
				}
				return []*service.Order{late}
			}
			guard := func() error { log = append(log, "guard"); return nil }
			err := service.RunBatch(context.Background(), service.BatchRun{Orders: tc.orders, Begin: begin, Decide: sellAll, Guard: guard, Join: join})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(log, "; "); got != tc.want {
				t.Errorf("steps:\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

// An error of the decision or the guard aborts the sale and is its answer.
func TestRunBatchAbortsOnAnError(t *testing.T) {
	refused := errors.New("refused")
	for _, stage := range []string{"decide", "guard"} {
		var log []string
		begin := func(context.Context, []int32, []*service.Order) (service.BatchSale, error) {
			return &stepSale{log: &log, goods: map[int32]service.Goods{1: {GoodsNo: 1, Stock: 10}}}, nil
		}
		decide := func(service.Facts) (map[int32][]*service.Order, error) {
			if stage == "decide" {
				return nil, refused
			}
			return nil, nil
		}
		guard := func() error { return refused }
		orders := []*service.Order{{GoodsNo: 1, RequestID: "a", NewRequestID: true}}
		err := service.RunBatch(context.Background(), service.BatchRun{Orders: orders, Begin: begin, Decide: decide, Guard: guard})
		if !errors.Is(err, refused) || log[len(log)-1] != "abort" || slices.Contains(log, "sell+commit") {
			t.Errorf("%s refused: %v, steps %v; want the refusal, aborted, nothing sold", stage, err, log)
		}
	}
}
