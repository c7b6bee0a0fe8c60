package service

import (
	"context"
	"testing"
	"time"
)

// A sale of many goods leaves no per-goods entry behind beyond a bound: the
// sold-out marks, the queues of the seed's buyers and the sale windows.

func TestSoldOutMarksAreBoundedAndQueuesGoWithTheirLastWaiter(t *testing.T) {
	m := NewSoldOutMarks(time.Minute)
	for g := int32(1); g <= 3*maxMarks; g++ {
		_, done := m.whileInStock(g)
		m.mark(g, time.Now())
		done()
	}
	if marks, queues := m.remembered(); marks > maxMarks || queues != 0 {
		t.Fatalf("after %d goods: %d marks (at most %d), %d queues (want 0)", 3*maxMarks, marks, maxMarks, queues)
	}
	if !m.seen(3 * maxMarks) {
		t.Fatal("the newest mark was forgotten")
	}
	_, done := m.whileInStock(7)
	ctx2, done2 := m.whileInStock(7)
	done()
	if _, queues := m.remembered(); queues != 1 || ctx2.Err() != nil {
		t.Fatalf("with a waiter left: %d queues, its ctx %v", queues, ctx2.Err())
	}
	done2()
	if _, queues := m.remembered(); queues != 0 {
		t.Fatalf("after the last waiter: %d queues", queues)
	}
}

func TestSaleWindowsAreBounded(t *testing.T) {
	w := newSaleWindows(time.Minute)
	store := &readStore{}
	now := time.Now()
	for g := int32(1); g <= 2*maxWindows; g++ {
		if err := w.check(context.Background(), store, g, now); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	n := len(w.m)
	w.mu.Unlock()
	if n > maxWindows {
		t.Fatalf("%d windows remembered after %d goods, at most %d", n, 2*maxWindows, maxWindows)
	}
}
