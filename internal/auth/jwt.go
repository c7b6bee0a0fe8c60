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
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// DefaultLeeway is the clock skew tolerated on exp, nbf and iat.
const DefaultLeeway = 10 * time.Second

// MinSecretLen is the shortest HMAC secret accepted: 256 bits, the size of
// HS256's hash (RFC 7518 3.2).
const MinSecretLen = 32

// MaxTokenLen bounds a token before anything of it is decoded: a buyer's
// token (a header, the registered claims and a signature of RS256's 2048
// bits) is well under 1 KiB; 4 KiB leaves room for a few claims more.
const MaxTokenLen = 4096

// maxClaims bounds the claims a payload may name.
const maxClaims = 32

// DefaultMaxLifetime bounds how long a token may be valid, from its iat (or
// now) to its exp: a token minted for years is a password.
const DefaultMaxLifetime = 24 * time.Hour

// maxDate is the latest date a claim may give: the year 9999, far inside
// what a float64 holds to the second and time.Time to the nanosecond.
const maxDate = 253402300799

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
	// MaxLifetime bounds exp less iat (or less now, without iat); 0:
	// DefaultMaxLifetime.
	MaxLifetime time.Duration
}

// JWT verifies bearer tokens.
type JWT struct {
	parser   *jwt.Parser
	key      any
	method   string
	valid    func(string) bool
	lifetime time.Duration
}

// NewJWT returns a verifier for opts.
func NewJWT(opts Options) (*JWT, error) {
	if (opts.HMACSecret == nil) == (opts.PublicKey == nil) {
		return nil, errors.New("auth: give an HMAC secret or a public key, one of them")
	}
	j := &JWT{valid: opts.ValidBuyer, lifetime: opts.MaxLifetime}
	if j.lifetime <= 0 {
		j.lifetime = DefaultMaxLifetime
	}
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
//
// A token longer than MaxTokenLen is refused before anything of it is
// decoded, and a payload with more than maxClaims names before its values
// are: a forged token costs what a short one does, whatever it holds.
func (j *JWT) Buyer(token string) (string, error) {
	if len(token) > MaxTokenLen {
		return "", fmt.Errorf("%w: the token is over %d bytes", service.ErrUnauthenticated, MaxTokenLen)
	}
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
	if err := j.lifetimeOK(claims, time.Now()); err != nil {
		return "", fmt.Errorf("%w: %v", service.ErrUnauthenticated, err)
	}
	return claims.Sub, nil
}

// lifetimeOK refuses a token valid for longer than the verifier's maximum,
// from its iat, or from now when it has none.
func (j *JWT) lifetimeOK(c buyerClaims, now time.Time) error {
	from := float64(now.Unix())
	if c.Iat != nil {
		from = *c.Iat
	}
	if c.Exp != nil && *c.Exp-from > j.lifetime.Seconds() {
		return fmt.Errorf("the token is valid for longer than %v (auth.maxTokenLifetime)", j.lifetime)
	}
	return nil
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
