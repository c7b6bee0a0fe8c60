package main

import (
	"context"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
)

// The sampler lists a lock path once however many tracked goods share it,
// and gives each of them the length it read; a lock per goods is listed
// per goods.
func TestSamplerListsEachLockPathOnce(t *testing.T) {
	goods := make([]int32, 32)
	for i := range goods {
		goods[i] = int32(i + 1)
	}
	for _, c := range []struct {
		path     string
		listings int
	}{{"/locks/all", 1}, {"/locks/goods/{goodsNo}", 32}} {
		m := metrics.New("batch", nil)
		listed := map[string]int{}
		list := func(_ context.Context, p string) ([]string, error) {
			listed[p]++
			return []string{"_c_a-lock-0000000001", "_c_b-lock-0000000002", "_c_c-lock-0000000003"}, nil
		}
		paths := coord.NewPaths(c.path, 1)
		sampleQueues(context.Background(), list, paths, goods, m)
		n := 0
		for p, k := range listed {
			n += k
			if k != 1 {
				t.Errorf("%s: %s listed %d times in one round, want once", c.path, p, k)
			}
		}
		if n != c.listings {
			t.Errorf("%s: %d listings for %d goods, want %d", c.path, n, len(goods), c.listings)
		}
		for _, g := range goods {
			if q := m.Snapshot(g).QueueLength; q != 3 {
				t.Errorf("%s: goods %d shows a queue of %d, want 3", c.path, g, q)
			}
		}
	}
}
