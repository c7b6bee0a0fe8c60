package repo

import (
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The waiting list names at most maxWaitingGoods goods, the lowest
// numbers, and fits its column even with large counts.
func TestAWaitingListIsBounded(t *testing.T) {
	w := map[int32]service.Waiting{}
	for no := int32(1); no <= 100; no++ {
		w[no] = service.Waiting{First: time.UnixMicro(1_800_000_000_000_000), Last: time.UnixMicro(1_800_000_099_000_000), N: 1_000_000}
	}
	text := encodeWaiting(w)
	if len(text) > 2048 {
		t.Fatalf("the list of 100 goods is %d bytes; the column holds 2048", len(text))
	}
	got := map[int32]service.Waiting{}
	if err := addWaiting(got, text); err != nil || len(got) != maxWaitingGoods || got[maxWaitingGoods] != w[maxWaitingGoods] {
		t.Fatalf("decoded %d goods (%v), goods %d %v; want %d, the lowest", len(got), err, maxWaitingGoods, got[maxWaitingGoods], maxWaitingGoods)
	}
}
