package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// authAnswer is what a request of the auth tests heard.
type authAnswer struct {
	status  int
	Code    string `json:"code"`
	OrderID uint64 `json:"orderId"`
	UserID  string `json:"userId"`
	header  http.Header
}

// send makes one request with the given header pairs.
func send(t *testing.T, method, url string, header ...string) authAnswer {
	t.Helper()
	a, body := e2e.AskJSON[authAnswer](t, method, url, header...)
	body.status, body.header = a.Status, a.Header
	return body
}

// TestWhoMayDoWhat runs an instance with auth.mode jwt and the limits on,
// and tries what issue #29 lists against it: tokens that must be refused,
// another buyer's order read and paid, a bot, many tokens from one address,
// and a load test with a token per buyer, exact. The secret never reaches
// the log.
func TestWhoMayDoWhat(t *testing.T) {
	dir := t.TempDir()
	secret := "UFltCCeUBM6SBqzGEEH8PbRi1h1o5AWevGprmVitHxtO" // random: the shop refuses a secret made by hand
	secretFile := filepath.Join(dir, "hs256.secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := e2e.NewStack(t, e2e.WithSetting("auth.mode", "jwt"), e2e.WithSetting("auth.hmacSecretFile", secretFile), e2e.WithSetting("auth.issuer", "https://login.example"),
		e2e.WithSetting("auth.audience", "seckill"), e2e.WithStrategy("batch"), e2e.WithLogLevel("debug"))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1-2", "--stock", "1000", "--clear-orders")
	token := func(buyer string, mutate ...func(jwt.MapClaims)) string {
		c := jwt.MapClaims{"sub": buyer, "iss": "https://login.example", "aud": "seckill", "exp": time.Now().Add(time.Hour).Unix()}
		for _, m := range mutate {
			m(c)
		}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}

	t.Run("tokens", func(t *testing.T) {
		// The buyer limit alone: every buyer here is one client address
		// (loopback), which auth.mode jwt's client limit would count as one.
		in := s.Serve(t, e2e.WithSetting("limits.buyerRate", "1"), e2e.WithSetting("limits.buyerBurst", "3"), e2e.WithSetting("limits.clientRate", "0"))
		valid := jwt.MapClaims{"sub": "alice", "iss": "https://login.example", "aud": "seckill", "exp": time.Now().Add(time.Hour).Unix()}
		forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, valid).SignedString([]byte(strings.Repeat("f", 48)))
		if err != nil {
			t.Fatal(err)
		}
		none, err := jwt.NewWithClaims(jwt.SigningMethodNone, valid).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			header []string
			status int
			code   string
		}{
			{"no token", nil, 401, "unauthenticated"},
			{"forged signature", []string{"Authorization", "Bearer " + forged}, 401, "unauthenticated"},
			{"alg none", []string{"Authorization", "Bearer " + none}, 401, "unauthenticated"},
			{"expired", []string{"Authorization", token("alice", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() })}, 401, "unauthenticated"},
			{"not yet valid", []string{"Authorization", token("alice", func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() })}, 401, "unauthenticated"},
			{"wrong issuer", []string{"Authorization", token("alice", func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })}, 401, "unauthenticated"},
			{"wrong audience", []string{"Authorization", token("alice", func(c jwt.MapClaims) { c["aud"] = "elsewhere" })}, 401, "unauthenticated"},
			{"no sub", []string{"Authorization", token("alice", func(c jwt.MapClaims) { delete(c, "sub") })}, 401, "unauthenticated"},
			{"X-User-ID naming another buyer", []string{"Authorization", token("alice"), "X-User-ID", "alice2"}, 403, "buyer_mismatch"},
		} {
			a := send(t, http.MethodGet, in.URL+"/goods-stock/1", tc.header...)
			if a.status != tc.status || a.Code != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.name, a.status, a.Code, tc.status, tc.code)
			}
			if a.status == 401 && !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: WWW-Authenticate %q", tc.name, a.header.Get("WWW-Authenticate"))
			}
		}
		// alice buys; mallory can neither read nor pay her order; nobody
		// without a token can.
		bought := send(t, http.MethodGet, in.URL+"/goods-stock/1", "Authorization", token("alice"))
		if bought.status != 200 || bought.UserID != "alice" || bought.OrderID == 0 {
			t.Fatalf("alice's purchase: %d %s buyer %q order %d", bought.status, bought.Code, bought.UserID, bought.OrderID)
		}
		order := fmt.Sprintf("%s/orders/%d", in.URL, bought.OrderID)
		for _, tc := range []struct {
			method, url string
			header      []string
			status      int
			code        string
		}{
			{http.MethodGet, order, nil, 401, "unauthenticated"},
			{http.MethodPost, order + "/pay", nil, 401, "unauthenticated"},
			{http.MethodGet, order, []string{"Authorization", token("mallory")}, 404, "order_not_found"},
			{http.MethodPost, order + "/pay", []string{"Authorization", token("mallory")}, 404, "order_not_found"},
			{http.MethodGet, order, []string{"Authorization", token("alice")}, 200, "ok"},
			{http.MethodPost, order + "/pay", []string{"Authorization", token("alice")}, 200, "ok"},
		} {
			if a := send(t, tc.method, tc.url, tc.header...); a.status != tc.status || a.Code != tc.code {
				t.Errorf("%s %s %v: %d %s, want %d %s", tc.method, tc.url, tc.header, a.status, a.Code, tc.status, tc.code)
			}
		}
		// A request id is its buyer's. alice's retry replays her order; eve
		// sending alice's request id buys for herself and hears nothing of
		// alice's order; eve taking the id carol will use next blocks
		// neither carol's purchase (of another goods) nor its retry. (Each buyer stays within
		// the buyer limit's burst of 3.)
		first := send(t, http.MethodGet, in.URL+"/goods-stock/2", "Authorization", token("alice"), "X-Request-ID", "alice-req-1")
		again := send(t, http.MethodGet, in.URL+"/goods-stock/2", "Authorization", token("alice"), "X-Request-ID", "alice-req-1")
		if first.status != 200 || again.status != 200 || again.OrderID != first.OrderID {
			t.Fatalf("alice's purchase and its retry: %d %s order %d, %d %s order %d", first.status, first.Code, first.OrderID, again.status, again.Code, again.OrderID)
		}
		if a := send(t, http.MethodGet, in.URL+"/goods-stock/2", "Authorization", token("eve"), "X-Request-ID", "alice-req-1"); a.status != 200 || a.UserID != "eve" || a.OrderID == first.OrderID {
			t.Errorf("eve sending alice's used request id: %d %s buyer %q order %d, want 200 with an order of her own (alice's is %d)", a.status, a.Code, a.UserID, a.OrderID, first.OrderID)
		}
		squat := send(t, http.MethodGet, in.URL+"/goods-stock/1", "Authorization", token("eve"), "X-Request-ID", "carol-req-1")
		mine := send(t, http.MethodGet, in.URL+"/goods-stock/2", "Authorization", token("carol"), "X-Request-ID", "carol-req-1")
		retry := send(t, http.MethodGet, in.URL+"/goods-stock/2", "Authorization", token("carol"), "X-Request-ID", "carol-req-1")
		if squat.status != 200 || mine.status != 200 || mine.UserID != "carol" || mine.OrderID == squat.OrderID || retry.status != 200 || retry.OrderID != mine.OrderID {
			t.Errorf("eve took carol-req-1 first (%d %s order %d); carol's purchase under it: %d %s order %d, its retry %d %s order %d; want her own order, replayed",
				squat.status, squat.Code, squat.OrderID, mine.status, mine.Code, mine.OrderID, retry.status, retry.Code, retry.OrderID)
		}

		// A bot: 40 purchases at once with one token; then an honest buyer.
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[string]int{}
		bot := token("bot")
		for range 40 {
			wg.Go(func() {
				a := send(t, http.MethodGet, in.URL+"/goods-stock/1", "Authorization", bot)
				mu.Lock()
				codes[a.Code]++
				mu.Unlock()
				if a.status == 429 && a.header.Get("Retry-After") == "" {
					t.Errorf("429 without Retry-After")
				}
			})
		}
		wg.Wait()
		if codes["too_many_requests"] < 36 || codes["ok"] != 1 {
			t.Errorf("the bot's 40 purchases at once: %v; want one order and at least 36 refused 429", codes)
		}
		if a := send(t, http.MethodGet, in.URL+"/goods-stock/1", "Authorization", token("honest")); a.status != 200 {
			t.Errorf("an honest buyer after the bot: %d %s", a.status, a.Code)
		}
		if n := e2e.MetricValue(t, in.URL, `seckill_purchases_total{goods="1",outcome="too_many_requests",strategy="batch"}`); int(n) != codes["too_many_requests"] {
			t.Errorf("the metrics count %v refusals, the bot heard %d", n, codes["too_many_requests"])
		}
		if n := e2e.MetricValue(t, in.URL, `seckill_purchases_total{goods="1",outcome="unauthenticated",strategy="batch"}`); n != 8 {
			t.Errorf("the metrics count %v unauthenticated purchases, want the 8 refused above", n)
		}
		if a := send(t, http.MethodGet, in.URL+"/goods/1"); a.status != 200 {
			t.Errorf("the goods' stock without a token: %d %s (it is public)", a.status, a.Code)
		}
		if strings.Contains(in.Logs(), secret) {
			t.Errorf("the HMAC secret is in the log")
		}
	})

	t.Run("an RSA public key", func(t *testing.T) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		keyFile := filepath.Join(dir, "login.pub.pem")
		if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
			t.Fatal(err)
		}
		in := s.Serve(t, e2e.WithSetting("auth.hmacSecretFile", ""), e2e.WithSetting("auth.publicKeyFile", keyFile))
		claims := jwt.MapClaims{"sub": "rsa-buyer", "iss": "https://login.example", "aud": "seckill", "exp": time.Now().Add(time.Hour).Unix()}
		confused, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(pemKey)
		if err != nil {
			t.Fatal(err)
		}
		if a := send(t, http.MethodGet, in.URL+"/goods-stock/1", "Authorization", "Bearer "+confused); a.status != 401 {
			t.Errorf("HS256 signed with the shop's RSA public key as its secret: %d %s, want 401", a.status, a.Code)
		}
		good, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		if a := send(t, http.MethodGet, in.URL+"/goods-stock/1", "Authorization", "Bearer "+good); a.status != 200 || a.UserID != "rsa-buyer" {
			t.Errorf("an RS256 token: %d %s buyer %q", a.status, a.Code, a.UserID)
		}
	})

	t.Run("many tokens from one address", func(t *testing.T) {
		in := s.Serve(t, e2e.WithSetting("limits.clientRate", "0.01"), e2e.WithSetting("limits.clientBurst", "5"))
		served := 0
		for i := range 30 {
			a := send(t, http.MethodGet, in.URL+"/goods-stock/1", "Authorization", token(fmt.Sprint("puppet-", i)))
			switch a.status {
			case 200:
				served++
			case 429:
			default:
				t.Fatalf("puppet %d: %d %s", i, a.status, a.Code)
			}
		}
		if served != 5 {
			t.Errorf("%d of 30 tokens from one address served, want the client burst, 5", served)
		}
	})

	t.Run("a load test with a token per buyer", func(t *testing.T) {
		in1, in2 := s.Serve(t), s.Serve(t)
		loadtest := filepath.Join(dir, "loadtest")
		if out, err := exec.Command("go", "build", "-o", loadtest, "../../loadtest").CombinedOutput(); err != nil {
			t.Fatalf("build loadtest: %v\n%s", err, out)
		}
		s.Shop(t, "stock", "set", "--goods", "1-5", "--stock", "100", "--clear-orders")
		cmd := exec.Command(loadtest, "--url", in1.URL+","+in2.URL, "--goods", "1-5", "--requests", "800", "--concurrency", "50",
			"--buyers", "600", "--jwt-secret-file", secretFile, "--jwt-issuer", "https://login.example", "--jwt-audience", "seckill",
			"--expect-exact", "--quiet")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("loadtest with tokens: %v\n%s", err, out)
		}
		for _, want := range []string{"oversold", "0"} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("loadtest output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(string(out), "unauthenticated") {
			t.Fatalf("tokens refused:\n%s", out)
		}
		for _, in := range []*e2e.Instance{in1, in2} {
			if strings.Contains(in.Logs(), secret) {
				t.Errorf("the HMAC secret is in the log")
			}
		}
	})
}

// TestZooKeeperClosedToStrangers: two instances with zookeeper.auth sell
// while a client without the identity keeps trying to queue on their lock
// and to delete the nodes it sees there. It is refused (NoAuth) every time,
// and the sale stays exact.
func TestZooKeeperClosedToStrangers(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithSetting("zookeeper.auth", "digest:"+e2e.ZKDigest), e2e.WithStrategy("seed"), e2e.WithMaxSleep(5*time.Millisecond))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders")
	in1, in2 := s.Serve(t), s.Serve(t)
	outsider, _, err := gozk.Connect(s.ZKServers, 10*time.Second, gozk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer outsider.Close()
	stop := make(chan struct{})
	refused := map[string]int{}
	var others []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			_, err := outsider.Create(s.LockPath+"/_c_outsider-lock-", nil, gozk.FlagEphemeralSequential, gozk.WorldACL(gozk.PermAll))
			switch {
			case errors.Is(err, gozk.ErrNoAuth):
				refused["create"]++
			case errors.Is(err, gozk.ErrNoNode): // the lock path is a container: gone while nobody queues
			default:
				others = append(others, fmt.Errorf("create: %v", err))
			}
			kids, _, err := outsider.Children(s.LockPath)
			for _, k := range kids {
				switch err := outsider.Delete(s.LockPath+"/"+k, -1); {
				case errors.Is(err, gozk.ErrNoAuth):
					refused["delete"]++
				case errors.Is(err, gozk.ErrNoNode): // released meanwhile
				default:
					others = append(others, fmt.Errorf("delete %s: %v", k, err))
				}
			}
		}
	}()
	answers, _ := closedLoadOf([]string{in1.URL, in2.URL}, 300, 30, func(int) int32 { return 1 })
	close(stop)
	<-done
	ok := sold(t, answers)
	stock, orders := s.GoodsCounts(t)
	if ok != 100 || stock[1] != 0 || orders[1] != 100 {
		t.Fatalf("%d sold, stock left %d, %d order rows; want 100, 0, 100", ok, stock[1], orders[1])
	}
	if refused["create"] == 0 || refused["delete"] == 0 || len(others) > 0 {
		t.Fatalf("the outsider: refused %v, other answers %v; want NoAuth for both, nothing else", refused, others)
	}
	t.Logf("the outsider was refused %v", refused)
}

// sold counts the 200s among answers; anything but a 200 or sold out fails
// the test.
func sold(t *testing.T, answers []e2e.Answer) int {
	t.Helper()
	ok := 0
	for _, a := range answers {
		switch {
		case a.Err != nil:
			t.Fatalf("a purchase: %v", a.Err)
		case a.Status == 200:
			ok++
		case a.Code != "sold_out":
			t.Errorf("a purchase answered %d %s", a.Status, a.Code)
		}
	}
	return ok
}
