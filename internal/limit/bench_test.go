package limit_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/limit"
)

// BenchmarkAllow is one purchase's check against a limiter holding 20 000
// buyers.
func BenchmarkAllow(b *testing.B) {
	l := limit.New(limit.Options{Rate: 100, Burst: 5})
	keys := make([]string, 20000)
	for i := range keys {
		keys[i] = "buyer-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Allow(keys[i%len(keys)], time.Now())
		i++
	}
}
