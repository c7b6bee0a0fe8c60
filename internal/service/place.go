package service

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
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

// placeVersion starts every token; a token of another form is no place.
const placeVersion = "p1."

// placeMACSize is the signature's length in a token (of SHA-256's 32).
const placeMACSize = 16

// placeSigner signs and reads places with the room's key.
type placeSigner struct{ key []byte }

// sign is p's token for buyer who.
func (s placeSigner) sign(p Place, who string) string {
	var raw [4 + 8 + 8 + placeMACSize]byte
	binary.BigEndian.PutUint32(raw[0:], uint32(p.GoodsNo))
	binary.BigEndian.PutUint64(raw[4:], uint64(p.At.UnixMicro()))
	binary.BigEndian.PutUint64(raw[12:], uint64(p.Expires.Unix()))
	copy(raw[20:], s.mac(raw[:20], who))
	return placeVersion + base64.RawURLEncoding.EncodeToString(raw[:])
}

// read is the place token holds for buyer who and goodsNo, if it is one
// the room signed for them and it has not lapsed at now. Anything else —
// malformed, forged, another buyer's or goods', lapsed — is no place: its
// bearer is a new arrival, told nothing more.
func (s placeSigner) read(token string, goodsNo int32, who string, now time.Time) (Place, bool) {
	if len(token) <= len(placeVersion) || token[:len(placeVersion)] != placeVersion || len(token) > 64 {
		return Place{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[len(placeVersion):])
	if err != nil || len(raw) != 20+placeMACSize {
		return Place{}, false
	}
	if !hmac.Equal(raw[20:], s.mac(raw[:20], who)) {
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

func (s placeSigner) mac(body []byte, who string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("seckill place\x00"))
	m.Write(body)
	m.Write([]byte(who))
	return m.Sum(nil)[:placeMACSize]
}
