package service

import "time"

// The places an instance gave, by buyer, while they are valid: a request
// that comes without its place (no cookie, no X-Place) gets the place its
// buyer holds, not a new one, and one client address (the connection's
// peer, or the client a trusted proxy names) holds at most
// RoomConfig.PlacesPerClient places of a goods. Without it, each request
// without the cookie was a new place and a buyer ahead of everyone after
// it: 300 requests as one X-User-ID (or as 300 made-up ids) made later
// buyers hear sold out while pieces were left (#75 item 2).
//
// Per instance: a buyer who asks each instance without its cookie holds a
// place at each, as many as the instances, not one a request.

// roomMaxHeld bounds the places remembered; past it new places are given
// unremembered, as before (each second the lapsed ones are forgotten).
const roomMaxHeld = 200_000

// heldKey is a buyer's place of a goods.
type heldKey struct {
	goodsNo int32
	who     string
}

// clientKey is a client address's places of a goods.
type clientKey struct {
	goodsNo int32
	client  string
}

// heldPlace is a place given and when it stops being valid.
type heldPlace struct {
	place  Place
	until  time.Time
	client string
}

// heldPlaces are an instance's places by buyer and the count by client.
type heldPlaces struct {
	byWho    map[heldKey]heldPlace
	byClient map[clientKey]int
}

func newHeldPlaces() heldPlaces {
	return heldPlaces{byWho: map[heldKey]heldPlace{}, byClient: map[clientKey]int{}}
}

// of is the valid place who holds of goodsNo at now.
func (h *heldPlaces) of(goodsNo int32, who string, now time.Time) (Place, bool) {
	p, ok := h.byWho[heldKey{goodsNo, who}]
	if !ok || !now.Before(p.until) {
		return Place{}, false
	}
	return p.place, true
}

// full reports whether client holds limit places of goodsNo (0: no limit).
func (h *heldPlaces) full(goodsNo int32, client string, limit int) bool {
	return limit > 0 && client != "" && h.byClient[clientKey{goodsNo, client}] >= limit
}

// give remembers who's place pl, given to client, valid until until (a
// place already held is renewed).
func (h *heldPlaces) give(who, client string, pl Place, until time.Time) {
	k := heldKey{pl.GoodsNo, who}
	old, ok := h.byWho[k]
	if !ok && len(h.byWho) >= roomMaxHeld {
		return
	}
	if ok {
		h.drop(clientKey{pl.GoodsNo, old.client})
	}
	h.byWho[k] = heldPlace{place: pl, until: until, client: client}
	if client != "" {
		h.byClient[clientKey{pl.GoodsNo, client}]++
	}
}

// forget drops the places no longer valid at now.
func (h *heldPlaces) forget(now time.Time) {
	for k, p := range h.byWho {
		if !now.Before(p.until) {
			delete(h.byWho, k)
			h.drop(clientKey{k.goodsNo, p.client})
		}
	}
}

func (h *heldPlaces) drop(k clientKey) {
	if k.client == "" {
		return
	}
	if h.byClient[k] <= 1 {
		delete(h.byClient, k)
	} else {
		h.byClient[k]--
	}
}
