package handler_test

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/internal/handler"
	"github.com/seckill-zk/seckill-zk/internal/limit"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// buyerShop records who bought.
type buyerShop struct {
	mu     sync.Mutex
	buyers []string
}

func (s *buyerShop) Purchase(_ context.Context, p service.PurchaseRequest) (*service.Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buyers = append(s.buyers, p.UserID)
	return &service.Order{ID: uint64(len(s.buyers)), GoodsNo: p.GoodsNo, RequestID: p.RequestID, UserID: p.UserID}, nil
}

func (s *buyerShop) Stock(context.Context, int32) (service.StockInfo, error) {
	return service.StockInfo{}, nil
}

var secret = []byte("0123456789abcdef0123456789abcdef-test-only")

// claims are a valid token's for buyer.
func claims(buyer string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"sub": buyer, "iss": "https://login.example", "aud": "seckill", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func hs256(t *testing.T, key []byte, c jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for kk, vv := range c {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func jwtHandler(t *testing.T, opts auth.Options, s handler.Services) http.Handler {
	t.Helper()
	opts.Issuer, opts.Audience, opts.ValidBuyer = "https://login.example", "seckill", handler.ValidID
	v, err := auth.NewJWT(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Auth = v
	return handler.New(s, slog.New(slog.DiscardHandler))
}

// The attacks on a purchase with auth.mode jwt: each is 401 (403 for a
// header naming another buyer), and the shop is never asked.
func TestJWTAttacksAreRefused(t *testing.T) {
	shop := &buyerShop{}
	h := jwtHandler(t, auth.Options{HMACSecret: secret}, handler.Services{Shop: shop})
	valid := claims("alice")
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, valid).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hs384, err := jwt.NewWithClaims(jwt.SigningMethodHS384, valid).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Hour
	for _, tc := range []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"no token", nil, 401, "unauthenticated"},
		{"not a bearer token", []string{"Authorization", "Basic YWxpY2U6c2VjcmV0"}, 401, "unauthenticated"},
		{"forged signature", []string{"Authorization", "Bearer " + hs256(t, []byte("another-secret-another-secret-00"), valid)}, 401, "unauthenticated"},
		{"alg none", []string{"Authorization", "Bearer " + none}, 401, "unauthenticated"},
		{"another algorithm with the right secret (HS384)", []string{"Authorization", "Bearer " + hs384}, 401, "unauthenticated"},
		{"expired", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "exp", time.Now().Add(-hour).Unix()))}, 401, "unauthenticated"},
		{"no expiry", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "exp", nil))}, 401, "unauthenticated"},
		{"not yet valid", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "nbf", time.Now().Add(hour).Unix()))}, 401, "unauthenticated"},
		{"wrong issuer", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "iss", "https://evil.example"))}, 401, "unauthenticated"},
		{"no issuer", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "iss", nil))}, 401, "unauthenticated"},
		{"wrong audience", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "aud", "another-service"))}, 401, "unauthenticated"},
		{"no sub", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "sub", nil))}, 401, "unauthenticated"},
		{"a sub outside the buyer id alphabet", []string{"Authorization", "Bearer " + hs256(t, secret, with(valid, "sub", "alice bob"))}, 401, "unauthenticated"},
		{"garbage", []string{"Authorization", "Bearer not.a.token"}, 401, "unauthenticated"},
		{"X-User-ID naming another buyer", []string{"Authorization", "Bearer " + hs256(t, secret, valid), "X-User-ID", "alice2"}, 403, "buyer_mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, hdr := do(t, h, "/goods-stock/1", tc.header...)
			if status != tc.status || body.Code != tc.code {
				t.Fatalf("%d %s, want %d %s", status, body.Code, tc.status, tc.code)
			}
			if status == 401 {
				want := `Bearer realm="seckill"`
				if len(tc.header) > 0 {
					want += `, error="invalid_token"`
				}
				if got := hdr.Get("WWW-Authenticate"); got != want {
					t.Errorf("WWW-Authenticate %q, want %q", got, want)
				}
			}
		})
	}
	if len(shop.buyers) != 0 {
		t.Fatalf("the shop was asked to sell to %v", shop.buyers)
	}
	// The token's buyer buys, as itself; a userId repeating it is fine.
	for _, path := range []string{"/goods-stock/1", "/goods-stock/1?userId=alice"} {
		status, body, _ := do(t, h, path, "Authorization", "Bearer "+hs256(t, secret, valid), "X-User-ID", "alice")
		if status != 200 || body.UserID != "alice" {
			t.Fatalf("%s with a valid token: %d %s buyer %q", path, status, body.Code, body.UserID)
		}
	}
	if len(shop.buyers) != 2 || shop.buyers[0] != "alice" || shop.buyers[1] != "alice" {
		t.Fatalf("the shop sold to %v, want alice twice", shop.buyers)
	}
}

// A shop given a public key accepts its algorithm alone: a token signed
// with HS256 using the public key itself as the secret (the classic
// confusion) is refused, and one signed with the private key is taken.
func TestJWTPublicKeys(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name    string
		public  any
		private any
		method  jwt.SigningMethod
	}{
		{"RS256", &rsaKey.PublicKey, rsaKey, jwt.SigningMethodRS256},
		{"ES256", &ecKey.PublicKey, ecKey, jwt.SigningMethodES256},
		{"EdDSA", edPub, edKey, jwt.SigningMethodEdDSA},
	} {
		t.Run(k.name, func(t *testing.T) {
			h := jwtHandler(t, auth.Options{PublicKey: k.public}, handler.Services{Shop: &buyerShop{}})
			good, err := jwt.NewWithClaims(k.method, claims("bob")).SignedString(k.private)
			if err != nil {
				t.Fatal(err)
			}
			if status, body, _ := do(t, h, "/goods-stock/1", "Authorization", "Bearer "+good); status != 200 || body.UserID != "bob" {
				t.Fatalf("a %s token: %d %s %q", k.name, status, body.Code, body.UserID)
			}
			der, err := x509.MarshalPKIXPublicKey(k.public)
			if err != nil {
				t.Fatal(err)
			}
			pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
			for _, confused := range [][]byte{pemKey, der} {
				if status, body, _ := do(t, h, "/goods-stock/1", "Authorization", "Bearer "+hs256(t, confused, claims("mallory"))); status != 401 {
					t.Fatalf("HS256 signed with the %s public key as its secret: %d %s", k.name, status, body.Code)
				}
			}
		})
	}
}

// With auth.mode jwt an order is its buyer's: another buyer reading or
// paying it hears 404 as for a missing order, no token 401.
func TestOrdersAreTheirBuyers(t *testing.T) {
	orders := &fakeOrders{orders: map[uint64]service.Order{7: {ID: 7, GoodsNo: 1, UserID: "alice", Status: service.OrderUnpaid}}}
	h := jwtHandler(t, auth.Options{HMACSecret: secret}, handler.Services{Shop: &buyerShop{}, Orders: orders})
	alice := "Bearer " + hs256(t, secret, claims("alice"))
	mallory := "Bearer " + hs256(t, secret, claims("mallory"))
	for _, tc := range []struct {
		method, path, authz string
		status              int
		code                string
	}{
		{http.MethodGet, "/orders/7", "", 401, "unauthenticated"},
		{http.MethodPost, "/orders/7/pay", "", 401, "unauthenticated"},
		{http.MethodGet, "/orders/7", mallory, 404, "order_not_found"},
		{http.MethodPost, "/orders/7/pay", mallory, 404, "order_not_found"},
		{http.MethodGet, "/orders/8", mallory, 404, "order_not_found"}, // the same answer as a missing one
		{http.MethodGet, "/orders/7", alice, 200, "ok"},
		{http.MethodPost, "/orders/7/pay", alice, 200, "ok"},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.authz != "" {
			req.Header.Set("Authorization", tc.authz)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status || !containsCode(rec.Body.String(), tc.code) {
			t.Errorf("%s %s (%s): %d %s, want %d %s", tc.method, tc.path, who(tc.authz, alice), rec.Code, rec.Body.String(), tc.status, tc.code)
		}
	}
}

func who(authz, alice string) string {
	switch authz {
	case "":
		return "no token"
	case alice:
		return "alice"
	}
	return "mallory"
}

func containsCode(body, code string) bool {
	return strings.Contains(body, `"code":"`+code+`"`)
}

// A bot firing 40 purchases at once with one valid token is refused beyond
// its burst with 429 and Retry-After, before the shop is asked; an honest
// buyer still buys.
func TestABotIsSlowed(t *testing.T) {
	shop := &buyerShop{}
	h := jwtHandler(t, auth.Options{HMACSecret: secret}, handler.Services{Shop: shop,
		BuyerLimit: limit.New(limit.Options{Rate: 1, Burst: 2})})
	bot := "Bearer " + hs256(t, secret, claims("bot"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	retry := map[string]int{}
	for range 40 {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, "/goods-stock/1", nil)
			req.Header.Set("Authorization", bot)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			mu.Lock()
			defer mu.Unlock()
			codes[rec.Code]++
			if rec.Code == 429 {
				retry[rec.Header().Get("Retry-After")]++
			}
		})
	}
	wg.Wait()
	if codes[200] > 3 || codes[429] < 37 || codes[200]+codes[429] != 40 {
		t.Fatalf("the bot's 40 purchases at once: %v; want at most 3 served, the rest 429", codes)
	}
	for v := range retry {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("Retry-After %q on a 429", v)
		}
	}
	if status, body, _ := do(t, h, "/goods-stock/1", "Authorization", "Bearer "+hs256(t, secret, claims("honest"))); status != 200 {
		t.Fatalf("an honest buyer after the bot: %d %s", status, body.Code)
	}
	bought := map[string]int{}
	for _, b := range shop.buyers {
		bought[b]++
	}
	if bought["bot"] != codes[200] || bought["honest"] != 1 {
		t.Fatalf("the shop was asked for %v", bought)
	}
}

// Many valid tokens from one address meet the client limit; the address
// is X-Forwarded-For's only when the connection comes from a trusted proxy.
func TestManyTokensFromOneAddress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proxies []string
		peers   []string // RemoteAddr of each request, in turn
		xff     func(i int) string
		served  int
		header  string // the header xff's value goes in; "": X-Forwarded-For
	}{
		{"one address", nil, []string{"203.0.113.7:4000"}, nil, 5, ""},
		{"an untrusted X-Forwarded-For is ignored", nil, []string{"203.0.113.7:4000"}, func(i int) string { return fmt.Sprintf("198.51.100.%d", i%250+1) }, 5, ""},
		{"behind a trusted proxy, each client its own", []string{"10.0.0.0/8"}, []string{"10.1.2.3:5000"}, func(i int) string { return fmt.Sprintf("198.51.100.%d", i%250+1) }, 30, ""},
		{"behind a trusted proxy, one client", []string{"10.0.0.0/8"}, []string{"10.1.2.3:5000", "10.9.9.9:5000"}, func(int) string { return "198.51.100.1" }, 5, ""},
		// X-Forwarded-For alone names the client, as the docs say: X-Real-IP
		// from behind the proxy does not.
		{"behind a trusted proxy, X-Real-IP is ignored", []string{"10.0.0.0/8"}, []string{"10.1.2.3:5000"}, func(i int) string { return fmt.Sprintf("198.51.100.%d", i%250+1) }, 5, "X-Real-IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := jwtHandler(t, auth.Options{HMACSecret: secret}, handler.Services{Shop: &buyerShop{}, TrustedProxies: tc.proxies,
				ClientLimit: limit.New(limit.Options{Rate: 0.001, Burst: 5})})
			served := 0
			for i := range 30 {
				req := httptest.NewRequest(http.MethodGet, "/goods-stock/1", nil)
				req.RemoteAddr = tc.peers[i%len(tc.peers)]
				req.Header.Set("Authorization", "Bearer "+hs256(t, secret, claims(fmt.Sprint("sock-puppet-", i))))
				if tc.xff != nil {
					req.Header.Set(cmp.Or(tc.header, "X-Forwarded-For"), tc.xff(i))
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				switch rec.Code {
				case 200:
					served++
				case 429:
				default:
					t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body.String())
				}
			}
			if served != tc.served {
				t.Fatalf("%d of 30 served, want %d", served, tc.served)
			}
		})
	}
}

// The client limit covers the order endpoints too, where every request
// costs a token's verification: a flood of forged tokens from one address
// is refused 429 before the signature is checked, past the burst.
func TestTheClientLimitCoversTheOrders(t *testing.T) {
	orders := &fakeOrders{orders: map[uint64]service.Order{7: {ID: 7, GoodsNo: 1, UserID: "alice", Status: service.OrderUnpaid}}}
	h := jwtHandler(t, auth.Options{HMACSecret: secret}, handler.Services{Shop: &buyerShop{}, Orders: orders,
		ClientLimit: limit.New(limit.Options{Rate: 0.001, Burst: 5})})
	forged := "Bearer " + hs256(t, []byte(strings.Repeat("x", 32)), claims("alice"))
	codes := map[int]int{}
	for i := range 30 {
		method, path := http.MethodGet, "/orders/7"
		if i%2 == 1 {
			method, path = http.MethodPost, "/orders/7/pay"
		}
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "203.0.113.7:4000"
		req.Header.Set("Authorization", forged)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes[rec.Code]++
	}
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 25 {
		t.Fatalf("30 forged tokens from one address on the order endpoints: %v, want 5 401s (the burst) and 25 429s", codes)
	}
}
