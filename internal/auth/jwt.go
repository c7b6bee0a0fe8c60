// Package auth verifies buyers' bearer tokens (JWT) and names the buyer a
// token proves: its subject.
//
// The accepted algorithm follows from the key the shop is given, never from
// the token: an HMAC secret accepts HS256 only, an RSA public key RS256, an
// ECDSA P-256 key ES256 and an Ed25519 key EdDSA; "none" is never accepted
// (RFC 8725). Every token must carry an expiry; the issuer and the audience
// are checked when configured.
package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// DefaultLeeway is the clock skew tolerated on exp, nbf and iat.
const DefaultLeeway = 10 * time.Second

// MinSecretLen is the shortest HMAC secret accepted: 256 bits, the size of
// HS256's hash (RFC 7518 3.2).
const MinSecretLen = 32

// Options configure a JWT verifier: exactly one of HMACSecret and PublicKey.
type Options struct {
	HMACSecret []byte
	PublicKey  crypto.PublicKey // *rsa.PublicKey, *ecdsa.PublicKey (P-256) or ed25519.PublicKey
	// Issuer and Audience, when set, must be the token's iss and one of
	// its aud.
	Issuer, Audience string
	// Leeway is the clock skew tolerated; 0: DefaultLeeway.
	Leeway time.Duration
	// ValidBuyer reports whether a subject is a buyer id the shop accepts;
	// nil accepts any non-empty subject.
	ValidBuyer func(string) bool
}

// JWT verifies bearer tokens.
type JWT struct {
	parser *jwt.Parser
	key    any
	method string
	valid  func(string) bool
}

// NewJWT returns a verifier for opts.
func NewJWT(opts Options) (*JWT, error) {
	if (opts.HMACSecret == nil) == (opts.PublicKey == nil) {
		return nil, errors.New("auth: give an HMAC secret or a public key, one of them")
	}
	j := &JWT{valid: opts.ValidBuyer}
	if j.valid == nil {
		j.valid = func(s string) bool { return s != "" }
	}
	switch k := opts.PublicKey.(type) {
	case nil:
		if len(opts.HMACSecret) < MinSecretLen {
			return nil, fmt.Errorf("auth: the HMAC secret has %d bytes; HS256 needs at least %d", len(opts.HMACSecret), MinSecretLen)
		}
		j.key, j.method = opts.HMACSecret, jwt.SigningMethodHS256.Alg()
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("auth: the RSA key has %d bits; at least 2048", k.N.BitLen())
		}
		j.key, j.method = k, jwt.SigningMethodRS256.Alg()
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("auth: the ECDSA key is on %s; ES256 needs P-256", k.Curve.Params().Name)
		}
		j.key, j.method = k, jwt.SigningMethodES256.Alg()
	case ed25519.PublicKey:
		j.key, j.method = k, jwt.SigningMethodEdDSA.Alg()
	default:
		return nil, fmt.Errorf("auth: a %T public key is not supported (RSA, ECDSA P-256 or Ed25519)", opts.PublicKey)
	}
	leeway := opts.Leeway
	if leeway == 0 {
		leeway = DefaultLeeway
	}
	po := []jwt.ParserOption{
		jwt.WithValidMethods([]string{j.method}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
	}
	if opts.Issuer != "" {
		po = append(po, jwt.WithIssuer(opts.Issuer))
	}
	if opts.Audience != "" {
		po = append(po, jwt.WithAudience(opts.Audience))
	}
	j.parser = jwt.NewParser(po...)
	return j, nil
}

// Method is the one algorithm the verifier accepts (HS256, RS256, ES256
// or EdDSA).
func (j *JWT) Method() string { return j.method }

// Buyer verifies a token (the Authorization header's value after
// "Bearer ") and returns its subject. Every refusal wraps
// service.ErrUnauthenticated and says why, without the token.
func (j *JWT) Buyer(token string) (string, error) {
	var claims buyerClaims
	_, err := j.parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		// WithValidMethods has refused every other algorithm already; the
		// key is returned only for its own, whatever the parser's options.
		if t.Method.Alg() != j.method {
			return nil, fmt.Errorf("algorithm %s is not accepted", t.Method.Alg())
		}
		return j.key, nil
	})
	if err != nil {
		return "", fmt.Errorf("%w: %s", service.ErrUnauthenticated, reason(err))
	}
	if !j.valid(claims.Sub) {
		return "", fmt.Errorf("%w: the token's subject is not a buyer id", service.ErrUnauthenticated)
	}
	return claims.Sub, nil
}

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

// registered are the claim names the shop reads (RFC 7519 4.1), each
// accepted in this spelling only.
var registered = map[string]bool{"sub": true, "iss": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true}

// errClaimNames refuses a payload whose names are ambiguous.
var errClaimNames = errors.New("auth: a claim named twice, or a registered claim in another case")

// UnmarshalJSON decodes the payload strictly: encoding/json matches names
// case-insensitively and keeps the last of duplicates, so that
// {"sub":"alice","Sub":"bob"} would name bob, and a token checked by
// another reader as alice's would buy as bob. A payload that names one
// claim twice (in any case), or a registered claim other than in lower
// case, is refused. The names are read by a scan of the object's top
// level (json.Decoder's tokens cost 70 allocations a token more).
func (c *buyerClaims) UnmarshalJSON(b []byte) error {
	names, err := topLevelNames(b)
	if err != nil {
		return err
	}
	for i, name := range names {
		lower := strings.ToLower(name)
		if registered[lower] && name != lower {
			return errClaimNames
		}
		for _, other := range names[:i] {
			if strings.EqualFold(name, other) {
				return errClaimNames
			}
		}
	}
	type plain buyerClaims // without this method
	return json.Unmarshal(b, (*plain)(c))
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

// reason is a short, token-free account of a parse error.
func reason(err error) string {
	for _, e := range []struct {
		err error
		why string
	}{
		{jwt.ErrTokenMalformed, "malformed token"},
		{jwt.ErrTokenUnverifiable, "unverifiable token (algorithm not accepted)"},
		{jwt.ErrTokenSignatureInvalid, "bad signature"},
		{jwt.ErrTokenRequiredClaimMissing, "a required claim is missing (exp)"},
		{jwt.ErrTokenExpired, "expired"},
		{jwt.ErrTokenNotValidYet, "not valid yet"},
		{jwt.ErrTokenUsedBeforeIssued, "issued in the future"},
		{jwt.ErrTokenInvalidIssuer, "wrong issuer"},
		{jwt.ErrTokenInvalidAudience, "wrong audience"},
	} {
		if errors.Is(err, e.err) {
			return e.why
		}
	}
	return "invalid token"
}

// ReadSecret reads an HMAC secret file: its bytes less trailing newlines.
func ReadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: read the HMAC secret: %w", err)
	}
	return []byte(strings.TrimRight(string(b), "\r\n")), nil
}

// ReadPublicKey reads a PEM public key (PKIX "PUBLIC KEY", or an X.509
// certificate's): RSA, ECDSA or Ed25519.
func ReadPublicKey(path string) (crypto.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: read the public key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("auth: %s holds no PEM block", path)
	}
	switch block.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("auth: %s: %w", path, err)
		}
		return k, nil
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("auth: %s: %w", path, err)
		}
		return c.PublicKey, nil
	default:
		return nil, fmt.Errorf("auth: %s holds a %q PEM block, not a public key (a private key must not be given to the shop)", path, block.Type)
	}
}

// MintHS256 signs a token for buyer with secret, valid for ttl, with iss
// and aud when set: what the load tools give each buyer.
func MintHS256(secret []byte, buyer, issuer, audience string, now time.Time, ttl time.Duration) (string, error) {
	claims := jwt.RegisteredClaims{
		Subject:   buyer,
		Issuer:    issuer,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	if audience != "" {
		claims.Audience = jwt.ClaimStrings{audience}
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}
