package repo

import (
	"context"
	"errors"
	"testing"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// BenchmarkGaleraClaim times a sale's first round trip on a Galera node,
// its transaction begun and the goods' row claimed, then rolled back: with
// the causal START TRANSACTION a cluster's sales begin with (beginSQL) and
// with a plain one, what the causal wait costs a claim: about 50 µs on an
// idle 3-node cluster on this machine (medians of 3 rounds, 346 against
// 288 µs, the rollback included; go test -run '^$' -bench GaleraClaim
// -benchtime 3000x -count 3 ./internal/repo/).
func BenchmarkGaleraClaim(b *testing.B) {
	ctx := context.Background()
	dsns := e2e.GaleraDatabase(b, e2e.Galera(b))
	s, err := Open(ctx, dsns[0], Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if err := s.SetStock(ctx, 1, 100, StockReset{}); err != nil {
		b.Fatal(err)
	}
	if !s.cluster {
		b.Fatal("the store does not see a Galera cluster (wsrep_on)")
	}
	errDone := errors.New("claimed")
	for _, bc := range []struct {
		name, begin string
	}{
		{"plain", "START TRANSACTION"},
		{"causal", s.beginSQL()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				err := s.inTx(ctx, s.sales[0], func(t *tx) error {
					t.begin = bc.begin
					if _, err := t.claim(ctx, 1, 0); err != nil {
						return err
					}
					return errDone
				})
				if !errors.Is(err, errDone) {
					b.Fatal(err)
				}
			}
		})
	}
}
