package service

import (
	"encoding/base64"
	"testing"
	"time"
)

// An anonymous buyer (no buyer id, no request id) is named by a new id
// each time it comes without a place, and by its place's id when it comes
// back with it: the place reads for it and for nobody else, and an id
// altered in the token is a new arrival's.
func TestAnAnonymousBuyerComesBackToItsOwnPlace(t *testing.T) {
	r, _ := newTestRoom(t, RoomConfig{})
	now := time.Now()
	who := roomWho(PurchaseRequest{GoodsNo: 1})
	if other := roomWho(PurchaseRequest{GoodsNo: 1}); other == who {
		t.Fatalf("two anonymous arrivals without a place are both %q", who)
	}
	pl := Place{GoodsNo: 1, At: now.Truncate(time.Microsecond), Expires: now.Add(10 * time.Second)}
	token := r.signer.sign(pl, who)
	if back := roomWho(PurchaseRequest{GoodsNo: 1, Place: token}); back != who {
		t.Fatalf("back with its place it is %q, want %q", back, who)
	}
	if got, ok := r.signer.read(token, 1, who, now); !ok || !got.At.Equal(pl.At) {
		t.Fatalf("its own place: %+v %t, want arrival %v", got, ok, pl.At)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(token[len(anonPlaceVersion):])
	raw[placeBodySize] ^= 0x01 // another id, the signature kept
	altered := anonPlaceVersion + base64.RawURLEncoding.EncodeToString(raw)
	alteredWho := roomWho(PurchaseRequest{GoodsNo: 1, Place: altered})
	for name, c := range map[string]struct{ token, who string }{
		"another anonymous buyer's": {token, roomWho(PurchaseRequest{GoodsNo: 1})},
		"a named buyer's":           {token, "u:alice"},
		"with its id altered":       {altered, alteredWho},
		"signed as a named form":    {placeVersion + token[len(anonPlaceVersion):], who},
	} {
		if p, ok := r.signer.read(c.token, 1, c.who, now); ok {
			t.Errorf("a place %s was read: %+v", name, p)
		}
	}
}
