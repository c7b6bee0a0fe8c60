package auth

import (
	"bytes"
	"encoding/json"
	"slices"
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
