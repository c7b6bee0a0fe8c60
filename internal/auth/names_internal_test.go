package auth

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// decoderNames is topLevelNames as json.Decoder reads them: the reference.
func decoderNames(b []byte) ([]string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil, false // not an object: the decoding after the scan refuses it
	}
	var names []string
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		names = append(names, t.(string))
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
	}
	return names, true
}

// The scan finds the names json.Decoder finds, in every valid object.
func FuzzTopLevelNamesAreTheDecoders(f *testing.F) {
	for _, seed := range []string{`{}`, `{"sub":"a","exp":1}`, `{"a":{"b":[1,"}",{"c":"\""}]},"d\u0041":null}`,
		` { "x" : [ ] , "y":"\\"} `, `{"sub":"alice","Sub":"bob"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, ok := decoderNames(b)
		if !ok {
			return
		}
		got, err := topLevelNames(b)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%q: scanned %q (%v), json.Decoder %q", b, got, err, want)
		}
	})
}

// Whatever a payload holds, the decoder either refuses it or reads claims
// no other reader can take for others: no two names one under Unicode
// folding, every registered claim in its own spelling, no more than
// maxClaims names, every date between 1970 and the year 9999.
func FuzzTheClaimsDecoderIsStrict(f *testing.F) {
	for _, seed := range []string{`{"sub":"a","exp":1}`, `{"sub":"alice","Sub":"bob"}`, `{"\u017fub":"dave"}`, `{"ſub":"dave"}`,
		`{"sub":"a","iat":1e300}`, `{"sub":"a","exp":9.2e18}`, `{"a":1,"A":2}`, `{"\u212a":1,"k":2}`, `{"sub":"a","nbf":-1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c buyerClaims
		if c.UnmarshalJSON(b) != nil {
			return
		}
		names, ok := decoderNames(b)
		if !ok {
			t.Fatalf("%q: accepted, but json.Decoder reads no object", b)
		}
		if len(names) > maxClaims {
			t.Fatalf("%q: %d names accepted", b, len(names))
		}
		for i, n := range names {
			for _, m := range names[:i] {
				if strings.EqualFold(n, m) {
					t.Fatalf("%q: %q and %q accepted together", b, m, n)
				}
			}
			for _, reg := range []string{"sub", "iss", "aud", "exp", "nbf", "iat", "jti"} {
				if strings.EqualFold(n, reg) && n != reg {
					t.Fatalf("%q: %q accepted for %q", b, n, reg)
				}
			}
		}
		for _, d := range []*float64{c.Exp, c.Nbf, c.Iat} {
			if d != nil && (*d < 0 || *d > maxDate) {
				t.Fatalf("%q: a date of %v accepted", b, *d)
			}
		}
	})
}
