package repo

import (
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The lease row's text survives a round trip; a lease that holds nothing
// unsold is empty.
func TestAllottedText(t *testing.T) {
	held := map[int32]service.Allotment{3: {Granted: 10, Sold: 4}, 1: {Granted: 7, Sold: 7}, 2: {Granted: 1}}
	text := encodeAllotted(held)
	if text != "2:1:0,3:10:4" {
		t.Fatalf("text %q", text)
	}
	back, err := decodeAllotted(text)
	if err != nil || len(back) != 2 || back[3] != held[3] || back[2] != held[2] {
		t.Fatalf("decoded %v, %v", back, err)
	}
	if text := encodeSold(held, map[int32]int32{2: 1, 3: 2}); text != "3:10:6" {
		t.Fatalf("after a batch's sales: %q", text) // goods 2 sold out of the lease
	}
	if _, err := decodeAllotted("1:2"); err == nil {
		t.Error("a malformed entry decoded")
	}
}
