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
		// encoding/json folds Unicode too: a long s (U+017F) is an s to it,
		// the Kelvin sign a k; a gateway reading names exactly sees none.
		{fmt.Sprintf(`{"\u017fub":"dave","exp":%d}`, exp), ""},
		{fmt.Sprintf(`{"ſub":"dave","exp":%d}`, exp), ""},
		{fmt.Sprintf(`{"sub":"alice","iſſ":"x","exp":%d}`, exp), ""},
		{fmt.Sprintf(`{"sub":"alice","exp":%d,"\u212aid":"a","kid":"b"}`, exp), ""},
	} {
		got, err := v.Buyer(sign(t, secret, tc.payload))
		switch {
		case tc.buyer == "" && err == nil:
			t.Errorf("%s: accepted as %q, want it refused", tc.payload, got)
		case tc.buyer != "" && (err != nil || got != tc.buyer):
			t.Errorf("%s: %q, %v; want %q", tc.payload, got, err, tc.buyer)
		}
	}
}

// sign is payload signed HS256 with secret, as any holder of the secret
// could: the checks below are the decoder's, after the signature.
func sign(t *testing.T, secret []byte, payload string) string {
	t.Helper()
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	unsigned := enc(`{"alg":"HS256","typ":"JWT"}`) + "." + enc(payload)
	sig, err := jwt.SigningMethodHS256.Sign(unsigned, secret)
	if err != nil {
		t.Fatal(err)
	}
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// A forged token costs what a short one does: one over auth.MaxTokenLen
// is refused before anything of it is decoded, and a payload of more
// claims than the shop reads before their values are. (16 000 claims of a
// forged 636 KB token were compared pairwise before the signature was
// checked: 438 ms of CPU each, both CPUs held by six of them.)
func TestAForgedTokenIsRefusedBeforeItsClaimsAreRead(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	var many strings.Builder
	many.WriteString(`{"sub":"alice"`)
	for i := range 16000 {
		fmt.Fprintf(&many, `,"c%d":0`, i)
	}
	many.WriteString(`}`)
	huge := sign(t, secret, many.String())
	if _, err := v.Buyer(huge[:len(huge)-4] + "AAAA"); err == nil || !strings.Contains(err.Error(), "over 4096 bytes") {
		t.Errorf("a %d-byte forged token: %v, want it refused for its size", len(huge), err)
	}
	var some strings.Builder
	some.WriteString(fmt.Sprintf(`{"sub":"alice","exp":%d`, time.Now().Add(time.Hour).Unix()))
	for i := range 40 {
		fmt.Fprintf(&some, `,"c%d":0`, i)
	}
	some.WriteString(`}`)
	if _, err := v.Buyer(sign(t, secret, some.String())); err == nil {
		t.Error("a token of 42 claims was accepted, want it refused: more claims than the shop reads")
	}
}

// Dates are numbers of seconds between 1970 and the year 9999, and a token
// may be valid for at most auth.maxTokenLifetime (24 h by default) from its
// iat, or from now without one.
func TestTokenDatesAreBounded(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{fmt.Sprintf(`{"sub":"alice","iat":%d,"exp":%d}`, now, now+3600), true},
		{fmt.Sprintf(`{"sub":"alice","exp":%d}`, now+23*3600), true},
		{fmt.Sprintf(`{"sub":"alice","nbf":1e300,"exp":%d}`, now+3600), false},
		{fmt.Sprintf(`{"sub":"alice","iat":1e300,"exp":%d}`, now+3600), false},
		{fmt.Sprintf(`{"sub":"alice","iat":-1,"exp":%d}`, now+3600), false},
		{`{"sub":"alice","exp":9.2e18}`, false},
		{fmt.Sprintf(`{"sub":"alice","iat":%d,"exp":%d}`, now, now+48*3600), false},
		{fmt.Sprintf(`{"sub":"alice","exp":%d}`, now+48*3600), false},
	} {
		_, err := v.Buyer(sign(t, secret, tc.payload))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.payload, err, tc.ok)
		}
	}
	long, err := auth.NewJWT(auth.Options{HMACSecret: secret, MaxLifetime: 72 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Buyer(sign(t, secret, fmt.Sprintf(`{"sub":"alice","exp":%d}`, now+48*3600))); err != nil {
		t.Errorf("a 48 h token under a 72 h maximum: %v", err)
	}
}
