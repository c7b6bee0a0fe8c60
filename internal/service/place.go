package service

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"
)

// A place in a goods' waiting room (room.go): the buyer's arrival, and
// until when the place is kept if the buyer does not come back. The buyer
// carries it (a cookie, or the X-Place header) as a token the shop signed
// with the room's key, which every instance shares: any instance reads it,
// nobody can forge it or hand it to another buyer (the buyer is in the
// signature), and the instances keep no place in memory.
type Place struct {
	GoodsNo int32
	At      time.Time // the arrival: the place's order
	Expires time.Time // the place lapses unless its buyer comes back before
}

// Two forms of token, told apart by how they start; a token of any other
// form is no place. A named buyer's (p1) is bound to the buyer's id or
// request id; an anonymous buyer's (p2) also carries the id the shop made
// for it (anonymousWho), which is whom it is bound to.
const (
	placeVersion     = "p1."
	anonPlaceVersion = "p2."
)

const (
	placeMACSize  = 16 // the signature's length in a token (of SHA-256's 32)
	placeBodySize = 4 + 8 + 8
	anonIDSize    = 12                                                                  // the shop-made id of an anonymous buyer
	anonPrefix    = "a:"                                                                // an anonymous buyer's who: anonPrefix + its id in base64
	placeMaxToken = len(anonPlaceVersion) + (placeBodySize+anonIDSize+placeMACSize)*4/3 // a p2 token's length, the longest
)

// placeSigner signs and reads places with the room's key.
type placeSigner struct{ key []byte }

// sign is p's token for buyer who.
func (s placeSigner) sign(p Place, who string) string {
	var raw [placeBodySize + anonIDSize + placeMACSize]byte
	binary.BigEndian.PutUint32(raw[0:], uint32(p.GoodsNo))
	binary.BigEndian.PutUint64(raw[4:], uint64(p.At.UnixMicro()))
	binary.BigEndian.PutUint64(raw[12:], uint64(p.Expires.Unix()))
	body, version := raw[:placeBodySize], placeVersion
	if id, ok := anonID(who); ok {
		copy(raw[placeBodySize:], id)
		body, version = raw[:placeBodySize+anonIDSize], anonPlaceVersion
	}
	token := append(body, s.mac(body, who)...)
	return version + base64.RawURLEncoding.EncodeToString(token)
}

// read is the place token holds for buyer who and goodsNo, if it is one
// the room signed for them and it has not lapsed at now. Anything else —
// malformed, forged, another buyer's or goods', lapsed — is no place: its
// bearer is a new arrival, told nothing more.
func (s placeSigner) read(token string, goodsNo int32, who string, now time.Time) (Place, bool) {
	raw, ok := placeRaw(token)
	if !ok {
		return Place{}, false
	}
	body := raw[:len(raw)-placeMACSize]
	if len(body) > placeBodySize && anonPrefix+encodeAnonID(body[placeBodySize:]) != who {
		return Place{}, false // another anonymous buyer's place
	}
	if !hmac.Equal(raw[len(body):], s.mac(body, who)) {
		return Place{}, false
	}
	p := Place{
		GoodsNo: int32(binary.BigEndian.Uint32(raw[0:])),
		At:      time.UnixMicro(int64(binary.BigEndian.Uint64(raw[4:]))),
		Expires: time.Unix(int64(binary.BigEndian.Uint64(raw[12:])), 0),
	}
	if p.GoodsNo != goodsNo || !now.Before(p.Expires) {
		return Place{}, false
	}
	return p, true
}

// placeRaw is token's bytes if it has the form of a p1 or a p2 token;
// nothing in it is verified yet.
func placeRaw(token string) ([]byte, bool) {
	size := placeBodySize + placeMACSize
	switch {
	case len(token) > placeMaxToken:
		return nil, false
	case strings.HasPrefix(token, anonPlaceVersion):
		size += anonIDSize
	case !strings.HasPrefix(token, placeVersion):
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[len(placeVersion):])
	if err != nil || len(raw) != size {
		return nil, false
	}
	return raw, true
}

func (s placeSigner) mac(body []byte, who string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("seckill place\x00"))
	m.Write(body)
	m.Write([]byte(who))
	return m.Sum(nil)[:placeMACSize]
}

// anonymousWho names a buyer with neither a buyer id nor a request id of
// its own, so that it too holds one place and comes back to it: by the id
// its place token carries, else by a new random id (a new arrival). The id
// is taken unverified here; read checks it against the token's signature,
// so a made-up or altered id is a new arrival's, like a missing one.
func anonymousWho(token string) string {
	if raw, ok := placeRaw(token); ok && len(raw) == placeBodySize+anonIDSize+placeMACSize {
		return anonPrefix + encodeAnonID(raw[placeBodySize:placeBodySize+anonIDSize])
	}
	var id [anonIDSize]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24)
	return anonPrefix + encodeAnonID(id[:])
}

// anonID is the id in an anonymous buyer's who.
func anonID(who string) ([]byte, bool) {
	if !strings.HasPrefix(who, anonPrefix) {
		return nil, false
	}
	id, err := base64.RawURLEncoding.DecodeString(who[len(anonPrefix):])
	return id, err == nil && len(id) == anonIDSize
}

func encodeAnonID(id []byte) string { return base64.RawURLEncoding.EncodeToString(id) }
