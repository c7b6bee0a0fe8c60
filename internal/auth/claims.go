package auth

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// A token's claims, decoded strictly: the names a payload may give, their
// spellings, their count and the range of its dates.

// buyerClaims are the registered claims as plain JSON fields: decoding
// them costs half what jwt.RegisteredClaims' own decoders do (a decoder
// per date, the audience through an interface), on every purchase. The
// parser validates them through jwt.Claims as it would its own.
type buyerClaims struct {
	Sub string          `json:"sub"`
	Iss string          `json:"iss"`
	Aud json.RawMessage `json:"aud"`
	Exp *float64        `json:"exp"`
	Nbf *float64        `json:"nbf"`
	Iat *float64        `json:"iat"`
}

// registered are the claim names the shop reads (RFC 7519 4.1), by their
// fold key (foldKey), each accepted in its own spelling only.
var registered = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{"sub", "iss", "aud", "exp", "nbf", "iat", "jti"} {
		m[foldKey(name)] = name
	}
	return m
}()

// errClaimNames refuses a payload whose names are ambiguous.
var errClaimNames = errors.New("auth: a claim named twice, or a registered claim in another spelling")

// errClaims refuses a payload of too many claims, or a date out of range.
var errClaims = errors.New("auth: too many claims, or a date out of range")

// UnmarshalJSON decodes the payload strictly. encoding/json matches names
// without case, Unicode folding included, and keeps the last of
// duplicates: {"sub":"alice","Sub":"bob"} would name bob, and {"ſub":"dave"}
// (a long s) dave, while a gateway that reads names exactly sees alice, or
// no subject. So a payload that names one claim twice in any folding, or a
// registered claim in any spelling but its own, is refused; so is one of
// more than maxClaims names, before any value is decoded, and one whose
// dates are not between 0 and the year 9999. The names are read by a scan
// of the object's top level (json.Decoder's tokens cost 70 allocations a
// token more), and compared by their fold keys in a map: linear in the
// payload, whatever it holds.
func (c *buyerClaims) UnmarshalJSON(b []byte) error {
	names, err := topLevelNames(b)
	if err != nil {
		return err
	}
	if len(names) > maxClaims {
		return errClaims
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		key := foldKey(name)
		if seen[key] {
			return errClaimNames
		}
		seen[key] = true
		if own, ok := registered[key]; ok && name != own {
			return errClaimNames
		}
	}
	type plain buyerClaims // without this method
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	for _, d := range []*float64{c.Exp, c.Nbf, c.Iat} {
		if d != nil && !(*d >= 0 && *d <= maxDate) {
			return errClaims
		}
	}
	return nil
}

// foldKey is name with each rune replaced by the least rune of its Unicode
// simple folding orbit: two names have one key when strings.EqualFold
// (and so encoding/json) takes them for one.
func foldKey(name string) string {
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(name) // an ASCII letter's least is its upper case ('S' < 's' < 'ſ')
	}
	var b strings.Builder
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// errNotObject: the claims are not a JSON object (or not JSON).
var errNotObject = errors.New("auth: the claims are not a JSON object")

// topLevelNames lists the names of the JSON object b's members, in order,
// without decoding their values. b is checked as JSON by the decoding that
// follows; this scan only has to find the names.
func topLevelNames(b []byte) ([]string, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errNotObject
	}
	names := make([]string, 0, 8)
	for i++; ; i++ {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == '}' && len(names) == 0 {
			return names, nil
		}
		if i >= len(b) || b[i] != '"' {
			return nil, errNotObject
		}
		end, escaped := stringEnd(b, i)
		if end < 0 {
			return nil, errNotObject
		}
		name := string(b[i+1 : end-1])
		if escaped || !utf8.ValidString(name) { // as encoding/json reads it
			name = ""
			if err := json.Unmarshal(b[i:end], &name); err != nil {
				return nil, errNotObject
			}
		}
		names = append(names, name)
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, errNotObject
		}
		if i = skipValue(b, i+1); i >= len(b) {
			return nil, errNotObject
		}
		if b[i] == '}' {
			return names, nil
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at b[i] (a
// quote) and whether it holds escapes; -1 when it does not end.
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// skipValue returns the index of the comma or closing brace that ends the
// member value starting at b[i], or len(b).
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, _ := stringEnd(b, i)
			if end < 0 {
				return len(b)
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return len(b)
}

func date(seconds *float64) *jwt.NumericDate {
	if seconds == nil {
		return nil
	}
	whole, frac := math.Modf(*seconds)
	return jwt.NewNumericDate(time.Unix(int64(whole), int64(frac*1e9)))
}

func (c *buyerClaims) GetExpirationTime() (*jwt.NumericDate, error) { return date(c.Exp), nil }
func (c *buyerClaims) GetNotBefore() (*jwt.NumericDate, error)      { return date(c.Nbf), nil }
func (c *buyerClaims) GetIssuedAt() (*jwt.NumericDate, error)       { return date(c.Iat), nil }
func (c *buyerClaims) GetIssuer() (string, error)                   { return c.Iss, nil }
func (c *buyerClaims) GetSubject() (string, error)                  { return c.Sub, nil }

// GetAudience reads aud as one string or an array of them (RFC 7519 4.1.3).
func (c *buyerClaims) GetAudience() (jwt.ClaimStrings, error) {
	if len(c.Aud) == 0 || string(c.Aud) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(c.Aud, &one); err == nil {
		return jwt.ClaimStrings{one}, nil
	}
	var many []string
	if err := json.Unmarshal(c.Aud, &many); err != nil {
		return nil, jwt.ErrInvalidType
	}
	return many, nil
}
