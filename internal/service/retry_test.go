package service_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// scripted is a strategy that fails with its errors in turn, then sells.
type scripted struct {
	errs  []error
	calls int
}

func (s *scripted) Close() {}

func (s *scripted) Purchase(_ context.Context, o *service.Order) error {
	s.calls++
	if o.ID != 0 {
		return fmt.Errorf("try %d began with the order of an earlier try (id %d)", s.calls, o.ID)
	}
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		o.ID = 99 // what a failed try may leave behind
		return err
	}
	o.ID = uint64(s.calls)
	return nil
}

// TestPurchasesThatWroteNothingAreTriedAgain: a conflict or a broken
// connection (nothing written) is tried again, up to ConflictRetries times,
// each try with a fresh order; other failures are not.
func TestPurchasesThatWroteNothingAreTriedAgain(t *testing.T) {
	conflict := fmt.Errorf("%w: deadlock", service.ErrConflict)
	lost := fmt.Errorf("%w: EOF", service.ErrConnectionLost)
	tests := []struct {
		name      string
		errs      []error
		retries   int
		want      error // nil: sold
		wantCalls int
	}{
		{"a conflict, then sold", []error{conflict}, 0, nil, 2},
		{"conflicts and a broken connection, then sold", []error{conflict, lost, conflict}, 0, nil, 4},
		{"conflicts beyond the bound", []error{conflict, conflict, conflict, conflict}, 3, service.ErrConflict, 4},
		{"no retries", []error{conflict}, -1, service.ErrConflict, 1},
		{"unavailable is not tried again", []error{service.ErrUnavailable}, 0, service.ErrUnavailable, 1},
		{"a lost lock is not tried again", []error{service.ErrLockLost}, 0, service.ErrLockLost, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &scripted{errs: tt.errs}
			store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, IsActive: 1}}}
			shop := must(service.New(custom(p), service.Deps{Store: store, Env: service.Env{Marks: service.NewSoldOutMarks(0), Config: service.Config{ConflictRetries: tt.retries}}}))
			o, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
			switch {
			case tt.want == nil && (err != nil || o == nil || o.ID != uint64(tt.wantCalls)):
				t.Errorf("Purchase = %+v, %v; want the order of try %d", o, err, tt.wantCalls)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("Purchase = %v, want %v", err, tt.want)
			}
			if p.calls != tt.wantCalls {
				t.Errorf("%d tries, want %d", p.calls, tt.wantCalls)
			}
		})
	}
}

// TestACutOffCommitThatDidNotHappenIsTriedAgain: a commit cut off whose
// order is not there wrote nothing; the purchase is made again.
func TestACutOffCommitThatDidNotHappenIsTriedAgain(t *testing.T) {
	p := &scripted{errs: []error{service.ErrCommitUnknown}}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, IsActive: 1}}}
	shop := must(service.New(custom(p), service.Deps{Store: store, Env: service.Env{Marks: service.NewSoldOutMarks(0), Config: service.Config{OutcomeTimeout: time.Second}}}))
	o, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
	if err != nil || o == nil || p.calls != 2 {
		t.Errorf("Purchase = %+v, %v after %d tries; want the second try's order", o, err, p.calls)
	}
}

// TestRetriesEndWithTheRequest: the wait before a retry ends with the
// buyer's request.
func TestRetriesEndWithTheRequest(t *testing.T) {
	var errs []error
	for range 100 {
		errs = append(errs, service.ErrConflict)
	}
	p := &scripted{errs: errs}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, IsActive: 1}}}
	shop := must(service.New(custom(p), service.Deps{Store: store, Env: service.Env{Marks: service.NewSoldOutMarks(0), Config: service.Config{ConflictRetries: 100}}}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "r"}); !errors.Is(err, service.ErrConflict) {
		t.Errorf("Purchase = %v, want the last conflict", err)
	}
	if p.calls >= 100 {
		t.Errorf("%d tries: the retries did not end with the request", p.calls)
	}
}
