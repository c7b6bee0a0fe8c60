package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill-zk/seckill-zk/internal/auth"
)

func TestKeysDecideTheAlgorithm(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := auth.ReadPublicKey(write("ec.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewJWT(auth.Options{PublicKey: pub})
	if err != nil || v.Method() != "ES256" {
		t.Fatalf("a P-256 key: %v, method %v; want ES256", err, v)
	}
	privDER, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.ReadPublicKey(write("ec.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: privDER}))); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Fatalf("a private key given as the public key: %v, want a refusal naming it", err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.NewJWT(auth.Options{PublicKey: &small.PublicKey}); err == nil {
		t.Fatal("a 1024-bit RSA key accepted")
	}
	secret, err := auth.ReadSecret(write("short.secret", []byte("too-short\n")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auth.NewJWT(auth.Options{HMACSecret: secret}); err == nil || strings.Contains(err.Error(), "too-short") {
		t.Fatalf("a 9-byte secret: %v; want refused, without the secret in the error", err)
	}
	if _, err := auth.NewJWT(auth.Options{}); err == nil {
		t.Fatal("no key accepted")
	}
}

// The claims decode as golang-jwt's own would: aud a string or an array,
// dates as numbers; anything else is refused.
func TestClaimForms(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret, Audience: "seckill"})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		name   string
		claims jwt.MapClaims
		ok     bool
	}{
		{"aud a string", jwt.MapClaims{"sub": "a", "aud": "seckill", "exp": exp}, true},
		{"aud an array", jwt.MapClaims{"sub": "a", "aud": []string{"other", "seckill"}, "exp": exp}, true},
		{"aud with an escape", jwt.MapClaims{"sub": "a", "aud": "seck\u0069ll", "exp": exp}, true},
		{"aud another", jwt.MapClaims{"sub": "a", "aud": []string{"other"}, "exp": exp}, false},
		{"aud a number", jwt.MapClaims{"sub": "a", "aud": 7, "exp": exp}, false},
		{"exp fractional", jwt.MapClaims{"sub": "a", "aud": "seckill", "exp": float64(exp) + 0.5}, true},
		{"exp a string", jwt.MapClaims{"sub": "a", "aud": "seckill", "exp": "soon"}, false},
		{"exp past, iat given", jwt.MapClaims{"sub": "a", "aud": "seckill", "exp": time.Now().Add(-time.Minute).Unix(), "iat": time.Now().Add(-time.Hour).Unix()}, false},
		{"iat in the future", jwt.MapClaims{"sub": "a", "aud": "seckill", "exp": exp, "iat": time.Now().Add(time.Hour).Unix()}, false},
	} {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, tc.claims).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Buyer(tok); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// A claim's name is matched exactly: a payload naming a registered claim
// twice, or in another case, is refused, where encoding/json would have
// taken the last of them case-insensitively ({"sub":"alice","Sub":"bob"}
// bought as bob).
func TestClaimNamesAreStrict(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	sign := func(payload string) string {
		enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		unsigned := enc(`{"alg":"HS256","typ":"JWT"}`) + "." + enc(payload)
		sig, err := jwt.SigningMethodHS256.Sign(unsigned, secret)
		if err != nil {
			t.Fatal(err)
		}
		return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	for _, tc := range []struct {
		payload string
		buyer   string // "": refused
	}{
		{fmt.Sprintf(`{"sub":"alice","exp":%d}`, exp), "alice"},
		{fmt.Sprintf(`{"sub":"alice","exp":%d,"Role":"x","role":"y"}`, exp), ""},
		{fmt.Sprintf(`{"sub":"alice","Sub":"bob","exp":%d}`, exp), ""},
		{fmt.Sprintf(`{"sub":"alice","sub":"bob","exp":%d}`, exp), ""},
		{fmt.Sprintf(`{"SUB":"bob","EXP":%d}`, exp), ""},
		{fmt.Sprintf(`{"sub":"alice","Exp":%d}`, exp), ""},
		{fmt.Sprintf(`{"sub":"alice","exp":%d,"custom":{"sub":"nested is no claim"}}`, exp), "alice"},
	} {
		got, err := v.Buyer(sign(tc.payload))
		switch {
		case tc.buyer == "" && err == nil:
			t.Errorf("%s: accepted as %q, want it refused", tc.payload, got)
		case tc.buyer != "" && (err != nil || got != tc.buyer):
			t.Errorf("%s: %q, %v; want %q", tc.payload, got, err, tc.buyer)
		}
	}
}
