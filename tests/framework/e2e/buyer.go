package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

// Outcome counts a crowd's answers by status and by code.
type Outcome struct {
	Status map[int]int
	Codes  map[string]int
}

// Buy fires n concurrent purchases of goods 1, round-robin over bases,
// through the load engine's closed loop (n buyers, one purchase each); an
// answer that is not JSON, or none, fails the test.
func Buy(t *testing.T, bases []string, n int) Outcome {
	t.Helper()
	out := Outcome{Status: map[int]int{}, Codes: map[string]int{}}
	r := loadgen.Closed(context.Background(), loadgen.ClosedOptions{Targets: bases, Requests: n, Concurrency: n})
	for i, a := range r.Answers {
		switch {
		case a.Err != nil:
			t.Errorf("request %d: %v", i, a.Err)
			continue
		case strings.HasPrefix(a.Code, "not JSON"):
			t.Errorf("request %d: status %d, %s", i, a.Status, a.Code)
		}
		out.Status[a.Status]++
		out.Codes[a.Code]++
	}
	return out
}

// PurchaseAsync sends one purchase of goods 1 and delivers its answer.
func PurchaseAsync(base string) <-chan Answer {
	return PurchaseOfAsync(base, 1)
}

// PurchaseOfAsync sends one purchase of goodsNo and delivers its answer.
func PurchaseOfAsync(base string, goodsNo int32) <-chan Answer {
	ch := make(chan Answer, 1)
	go func() {
		c := NewConn(base)
		defer c.Close()
		ch <- c.Purchase(goodsNo)
	}()
	return ch
}

// Await waits (at most 2 minutes) for an answer that came.
func Await(t *testing.T, what string, ch <-chan Answer) Answer {
	t.Helper()
	select {
	case a := <-ch:
		if a.Err != nil {
			t.Fatalf("%s: %v", what, a.Err)
		}
		return a
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: no answer within 2 minutes", what)
		return Answer{}
	}
}

// AskJSON is Ask with the answer's JSON body decoded into a T. A failed
// exchange or a body that is not JSON is an error of the test (t.Errorf:
// it may be called on any goroutine); the Answer says what came.
func AskJSON[T any](t testing.TB, method, url string, header ...string) (Answer, T) {
	t.Helper()
	var body T
	a := Ask(method, url, header...)
	if a.Err != nil {
		t.Errorf("%s %s: %v", method, url, a.Err)
		return a, body
	}
	if err := a.Decode(&body); err != nil {
		t.Errorf("%s %s: %v", method, url, err)
	}
	return a, body
}
