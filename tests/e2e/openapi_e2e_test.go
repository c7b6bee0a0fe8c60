package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// TestTheOpenAPIDescriptionMatchesALiveInstance: internal/api/openapi.yaml is a
// valid OpenAPI 3.1 document whose answer codes are the shop's (api.All),
// and live instances' answers to rounds of requests — a purchase, its
// replay, a sold out, bad input, goods read and listed, an order read and
// paid, the probes, the leader, the metrics and the dashboard; tokens and
// limits; the 503s of a held lock, a full queue, a lost COMMIT, MySQL and
// ZooKeeper gone — each match it: its status is described, its body
// validates, and the answer has no field the description does not name.
// Every status the description documents for a route is answered once at
// least. (Without a bound on GET /leader's ZooKeeper read, its request
// with ZooKeeper gone never got an answer.)
func TestTheOpenAPIDescriptionMatchesALiveInstance(t *testing.T) {
	ctx := context.Background()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatalf("internal/api/openapi.yaml: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("internal/api/openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	var codes []string
	for _, c := range doc.Components.Schemas["Code"].Value.Enum {
		codes = append(codes, fmt.Sprint(c))
	}
	if slices.Sort(codes); !slices.Equal(codes, slices.Sorted(slices.Values(api.All))) {
		t.Errorf("the description's codes %v, the shop's %v", codes, slices.Sorted(slices.Values(api.All)))
	}

	// The dashboard's page and this description are text, as text/plain is
	// to kin-openapi.
	for _, ct := range []string{"text/html", "application/yaml"} {
		openapi3filter.RegisterBodyDecoder(ct, func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		})
	}
	s := e2e.NewStack(t, e2e.WithPayTimeout(time.Minute))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "1", "--clear-orders")
	s.Shop(t, "stock", "set", "--goods", "2-3", "--stock", "5", "--clear-orders")
	s.Shop(t, "stock", "set", "--goods", "4", "--stock", "5", "--clear-orders", "--end", "+1s")
	start := time.Now() // goods 4's sale ends before start + 1 s
	in := s.Serve(t)
	doc.Servers = openapi3.Servers{{URL: in.URL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	// ask sends one request (from any goroutine), checks it (unless bad: the request is meant to
	// break the description's rules) and its answer against the description,
	// and returns the answer's JSON fields.
	client := &http.Client{Timeout: 30 * time.Second} // no answer is a failure, not a hang
	var seenMu sync.Mutex
	seen := map[string]bool{} // operation id and status of every answer
	ask := func(method, path string, bad bool, header ...string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, in.URL+path, nil)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("%s %s: not in the description: %v", method, path, err)
			return 0, nil
		}
		opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
		reqIn := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
		if err := openapi3filter.ValidateRequest(ctx, reqIn); err != nil && !bad {
			t.Errorf("%s %s: the request breaks the description: %v", method, path, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		seenMu.Lock()
		seen[fmt.Sprintf("%s %d", route.Operation.OperationID, resp.StatusCode)] = true
		seenMu.Unlock()
		respIn := &openapi3filter.ResponseValidationInput{RequestValidationInput: reqIn, Status: resp.StatusCode, Header: resp.Header, Options: opts}
		respIn.SetBodyBytes(body)
		if err := openapi3filter.ValidateResponse(ctx, respIn); err != nil {
			t.Errorf("%s %s: answer %d %.200s does not match the description: %v", method, path, resp.StatusCode, body, err)
		}
		var fields map[string]any
		_ = json.NewDecoder(bytes.NewReader(body)).Decode(&fields)
		return resp.StatusCode, fields
	}

	time.Sleep(time.Until(start.Add(1100 * time.Millisecond))) // goods 4's sale has ended
	status, bought := ask(http.MethodPost, "/goods-stock/1", false, "X-Request-ID", "openapi-1", "X-User-ID", "alice")
	if status != 200 || bought["orderId"] == nil {
		t.Fatalf("the purchase: %d %v", status, bought)
	}
	order := int(bought["orderId"].(float64))
	s.Shop(t, "stock", "set", "--goods", "3", "--stock", "5", "--start", "+1h")
	for _, r := range []struct {
		method, path string
		bad          bool
		header       []string
		status       int
	}{
		{http.MethodGet, "/goods-stock/3", false, nil, 503},                                                          // queued: a place in the pre-queue, an anonymous buyer's too
		{http.MethodPost, "/goods-stock/1", false, []string{"X-Request-ID", "openapi-1", "X-User-ID", "alice"}, 200}, // the replay
		{http.MethodGet, "/goods-stock/1", false, nil, 409},                                                          // sold out
		{http.MethodGet, "/goods-stock/2", false, []string{"X-Request-Timeout-Ms", "5000", "X-User-ID", "bob"}, 200},
		{http.MethodGet, "/goods-stock/2", false, []string{"X-User-ID", "bob"}, 409},                                 // already_bought
		{http.MethodPost, "/goods-stock/2", false, []string{"X-Request-ID", "openapi-1", "X-User-ID", "alice"}, 409}, // request_id_conflict
		{http.MethodGet, "/goods-stock/4", false, nil, 409},                                                          // ended
		{http.MethodGet, "/goods-stock/01", true, nil, 400},
		{http.MethodPost, "/goods-stock/01", true, nil, 400},
		{http.MethodGet, "/goods-stock/9", false, nil, 404},
		{http.MethodPost, "/goods-stock/9", false, nil, 404},
		{http.MethodGet, "/goods-stock/2", true, []string{"X-Request-ID", "not valid!"}, 400},
		{http.MethodGet, "/goods-stock/2", true, []string{"X-Request-Timeout-Ms", "0"}, 400},
		{http.MethodGet, "/goods-stock/2", true, []string{"X-User-ID", "no spaces"}, 400},
		{http.MethodGet, "/orders/0", true, nil, 400},
		{http.MethodGet, "/goods/1", false, nil, 200},
		{http.MethodGet, "/goods/01", true, nil, 400},
		{http.MethodGet, "/goods/9", false, nil, 404},
		{http.MethodGet, "/goods", false, nil, 200},
		{http.MethodGet, "/goods?after=1&limit=1", false, nil, 200},
		{http.MethodGet, "/goods?limit=0", true, nil, 400},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), false, nil, 200},
		{http.MethodPost, fmt.Sprintf("/orders/%d/pay", order), false, nil, 200},
		{http.MethodGet, "/orders/999999", false, nil, 404},
		{http.MethodPost, "/orders/0/pay", true, nil, 400},
		{http.MethodPost, "/orders/999999/pay", false, nil, 404},
		{http.MethodGet, "/leader", false, nil, 200},
		{http.MethodGet, "/healthz", false, nil, 200},
		{http.MethodGet, "/readyz", false, nil, 200},
		{http.MethodGet, "/metrics", false, nil, 200},
		{http.MethodGet, "/openapi.yaml", false, nil, 200},
		{http.MethodGet, "/dashboard", false, nil, 200},
		{http.MethodGet, "/dashboard/data?goods=1&history=1", false, nil, 200},
		{http.MethodGet, "/dashboard/data?goods=0", true, nil, 400},
		{http.MethodGet, "/dashboard/data?goods=9", false, nil, 404},
	} {
		if status, body := ask(r.method, r.path, r.bad, r.header...); status != r.status {
			t.Errorf("%s %s: %d %v, want %d", r.method, r.path, status, body, r.status)
		}
	}

	// A path asked with a method it does not answer: 405, as documented
	// under the operation of the path (its GET).
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		get, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		route, params, err := router.FindRoute(get)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, in.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		seenMu.Lock()
		seen[fmt.Sprintf("%s %d", route.Operation.OperationID, resp.StatusCode)] = true
		seenMu.Unlock()
		opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
		respIn := &openapi3filter.ResponseValidationInput{RequestValidationInput: &openapi3filter.RequestValidationInput{Request: get, PathParams: params, Route: route, Options: opts},
			Status: resp.StatusCode, Header: resp.Header, Options: opts}
		respIn.SetBodyBytes(body)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("DELETE %s: %d %s, want 405", path, resp.StatusCode, body)
		} else if err := openapi3filter.ValidateResponse(ctx, respIn); err != nil {
			t.Errorf("DELETE %s: answer %d %.200s does not match the description: %v", path, resp.StatusCode, body, err)
		}
	}

	// The refusals of a shop with tokens, limits and a sale not yet open.
	const hmacKey = "8F5oLvlaptxVuXh+cLiSY2ypm8OqmGsweDpFeQnTjdiX" // random: the shop refuses a secret made by hand
	secret := filepath.Join(t.TempDir(), "hs256.secret")
	if err := os.WriteFile(secret, []byte(hmacKey), 0o600); err != nil {
		t.Fatal(err)
	}
	jin := s.Serve(t, e2e.WithSetting("auth.mode", "jwt"), e2e.WithSetting("auth.hmacSecretFile", secret), e2e.WithSetting("limits.buyerRate", "0.01"), e2e.WithSetting("limits.buyerBurst", "1"))
	doc.Servers = openapi3.Servers{{URL: jin.URL}}
	if router, err = gorillamux.NewRouter(doc); err != nil {
		t.Fatal(err)
	}
	earlier := []*e2e.Instance{in, jin} // stopped before the last instance's other orders.payTimeout
	in = jin
	token := func(buyer string) string {
		tok, err := auth.MintHS256([]byte(hmacKey), buyer, "", "", time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	for _, r := range []struct {
		method, path string
		header       []string
		status       int
		code         string
	}{
		{http.MethodPost, "/goods-stock/2", nil, 401, "unauthenticated"},
		{http.MethodGet, "/goods-stock/2", nil, 401, "unauthenticated"},
		{http.MethodPost, "/goods-stock/2", []string{"Authorization", token("carol"), "X-User-ID", "dave"}, 403, "buyer_mismatch"},
		{http.MethodGet, "/goods-stock/2", []string{"Authorization", token("carol"), "X-User-ID", "dave"}, 403, "buyer_mismatch"},
		{http.MethodPost, "/goods-stock/3", []string{"Authorization", token("erin")}, 503, "queued"}, // a place in the pre-queue
		{http.MethodGet, "/goods-stock/3", nil, 401, "unauthenticated"},
		{http.MethodPost, "/goods-stock/2", []string{"Authorization", token("erin")}, 429, "too_many_requests"},
		{http.MethodGet, "/goods-stock/2", []string{"Authorization", token("erin")}, 429, "too_many_requests"},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), nil, 401, "unauthenticated"},
		{http.MethodPost, fmt.Sprintf("/orders/%d/pay", order), nil, 401, "unauthenticated"},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), []string{"Authorization", token("frank")}, 404, "order_not_found"},
		{http.MethodPost, fmt.Sprintf("/orders/%d/pay", order), []string{"Authorization", token("frank")}, 404, "order_not_found"},
	} {
		if status, body := ask(r.method, r.path, false, r.header...); status != r.status || body["code"] != r.code {
			t.Errorf("%s %s: %d %v, want %d %s", r.method, r.path, status, body, r.status, r.code)
		}
	}
	// With limits.clientRate, order reads and payments are paced per
	// client address too: one at once here, then none for a long while.
	in = s.Serve(t, e2e.WithSetting("auth.mode", "jwt"), e2e.WithSetting("auth.hmacSecretFile", secret), e2e.WithSetting("limits.clientRate", "0.01"), e2e.WithSetting("limits.clientBurst", "1"))
	earlier = append(earlier, in)
	doc.Servers = openapi3.Servers{{URL: in.URL}}
	if router, err = gorillamux.NewRouter(doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		method, path string
		header       []string
		status       int
		code         string
	}{
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), []string{"Authorization", token("frank")}, 404, "order_not_found"},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), []string{"Authorization", token("frank")}, 429, "too_many_requests"},
		{http.MethodPost, fmt.Sprintf("/orders/%d/pay", order), []string{"Authorization", token("frank")}, 429, "too_many_requests"},
		// Every route a client calls is paced, the reads too.
		{http.MethodGet, "/goods?limit=1", nil, 429, "too_many_requests"},
		{http.MethodGet, "/goods/1", nil, 429, "too_many_requests"},
		{http.MethodGet, "/leader", nil, 429, "too_many_requests"},
		{http.MethodGet, "/dashboard", nil, 429, "too_many_requests"},
		{http.MethodGet, "/dashboard/data?goods=1", nil, 429, "too_many_requests"},
	} {
		if status, body := ask(r.method, r.path, false, r.header...); status != r.status || body["code"] != r.code {
			t.Errorf("%s %s: %d %v, want %d %s", r.method, r.path, status, body, r.status, r.code)
		}
	}

	// The 503s and an expired order, from an instance of the seed's
	// strategy whose MySQL is reached through the test's proxy: a buyer
	// whose X-Request-Timeout-Ms passes behind a lock the test holds
	// (timeout), one who waits out lock.acquireTimeout (lock_timeout), one
	// beyond purchase.maxWaiting meanwhile (busy), one whose COMMIT's answer
	// is lost with MySQL gone (outcome_unknown), one while MySQL is gone
	// (unavailable), and the payment of an order past orders.payTimeout.
	// The instances of one database must agree on orders.payTimeout: the
	// earlier ones, with a minute, stop first.
	for _, e := range earlier {
		if err := e.Stop(t); err != nil {
			t.Errorf("stopping an earlier instance: %v", err)
		}
	}
	db, zkp := e2e.NewMySQLProxy(t, e2e.MySQLAddr(t, s.DSN)), e2e.NewProxy(t, s.ZKServers[0])
	s.Shop(t, "stock", "set", "--goods", "5", "--stock", "5", "--clear-orders")
	in = s.Serve(t, e2e.WithSetting("mysql.dsn", e2e.ViaProxy(t, s.DSN, db.Addr())), e2e.WithSetting("zookeeper.servers", zkp.Addr()), e2e.WithStrategy("seed"),
		e2e.WithAcquireTimeout(time.Second), e2e.WithSetting("purchase.maxWaiting", "1"), e2e.WithSetting("purchase.queueTarget", "0"), e2e.WithPayTimeout(time.Second),
		e2e.WithRoom(false)) // 503 busy past the admission: the room would hold the buyer at its door
	doc.Servers = openapi3.Servers{{URL: in.URL}}
	if router, err = gorillamux.NewRouter(doc); err != nil {
		t.Fatal(err)
	}
	want := func(what string, status int, fields map[string]any, wantStatus int, code string) {
		t.Helper()
		if status != wantStatus || fields["code"] != code {
			t.Errorf("%s: %d %v, want %d %s", what, status, fields, wantStatus, code)
		}
	}
	status, bought = ask(http.MethodPost, "/goods-stock/5", false)
	want("a purchase", status, bought, 200, "ok")
	release := holdLock(t, s)
	status, fields := ask(http.MethodPost, "/goods-stock/5", false, "X-Request-Timeout-Ms", "200")
	want("a buyer who would wait 200 ms behind a held lock", status, fields, 503, "timeout")
	type answer struct {
		status int
		fields map[string]any
	}
	waiting := make(chan answer, 1)
	go func() {
		status, fields := ask(http.MethodPost, "/goods-stock/5", false)
		waiting <- answer{status, fields}
	}()
	s.WaitForQueue(t, 2) // the test's node and the buyer's
	status, fields = ask(http.MethodGet, "/goods-stock/5", false)
	want("a buyer beyond purchase.maxWaiting", status, fields, 503, "busy")
	a := <-waiting
	want("a buyer who waited out lock.acquireTimeout", a.status, a.fields, 503, "lock_timeout")
	release()

	if bought["orderId"] != nil {
		time.Sleep(1100 * time.Millisecond) // past orders.payTimeout
		status, fields = ask(http.MethodPost, fmt.Sprintf("/orders/%d/pay", int(bought["orderId"].(float64))), false)
		want("paying an order past orders.payTimeout", status, fields, 409, "order_expired")
	}

	commit := db.HoldPacket(isSaleCommit, nil)
	go func() {
		status, fields := ask(http.MethodPost, "/goods-stock/5", false, "X-Request-Timeout-Ms", "3000")
		waiting <- answer{status, fields}
	}()
	select {
	case <-commit.Held():
	case <-time.After(30 * time.Second):
		t.Fatalf("the purchase's COMMIT never came\n%s", in.Logs())
	}
	commit.ReleaseAndCut() // and MySQL stays cut off
	a = <-waiting
	want("a purchase whose COMMIT's answer was lost", a.status, a.fields, 503, "outcome_unknown")
	for _, r := range []struct{ method, path, code string }{
		{http.MethodPost, "/goods-stock/5", "unavailable"},
		{http.MethodGet, "/goods/5", "unavailable"},
		{http.MethodGet, "/goods", "unavailable"},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), "unavailable"},
		{http.MethodPost, fmt.Sprintf("/orders/%d/pay", order), "unavailable"},
		{http.MethodGet, "/dashboard/data?goods=77", "unavailable"}, // not sampled yet: does it exist?
		{http.MethodGet, "/readyz", "not_ready"},
	} {
		status, fields = ask(r.method, r.path, false)
		want(r.method+" "+r.path+" while MySQL is gone", status, fields, 503, r.code)
	}
	db.Restore()
	zkp.Cut() // and ZooKeeper is gone
	status, fields = ask(http.MethodGet, "/leader", false)
	want("the leader while ZooKeeper is gone", status, fields, 503, "unavailable")
	zkp.Restore()

	// Every status the description documents was answered.
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for status := range op.Responses.Map() {
				if !seen[op.OperationID+" "+status] {
					t.Errorf("%s %s: documented, never answered here", op.OperationID, status)
				}
			}
		}
	}
}
