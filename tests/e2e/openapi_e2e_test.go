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
	"strings"
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
// and a live instance's answers to a round of requests — a purchase, its
// replay, a sold out, bad input, goods read and listed, an order read and
// paid, the probes, the leader, the metrics and the dashboard — each match
// it: its status is described, its body validates, and the answer has no
// field the description does not name.
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
	for _, c := range doc.Components.Schemas["Answer"].Value.Properties["code"].Value.Enum {
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
	s := e2e.NewStack(t, "SHOP_ORDERS_PAYTIMEOUT=1m")
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
	// ask sends one request, checks it (unless bad: the request is meant to
	// break the description's rules) and its answer against the description,
	// and returns the answer's JSON fields.
	ask := func(method, path string, bad bool, header ...string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, in.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s %s: not in the description: %v", method, path, err)
		}
		opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
		reqIn := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
		if err := openapi3filter.ValidateRequest(ctx, reqIn); err != nil && !bad {
			t.Errorf("%s %s: the request breaks the description: %v", method, path, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
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
	for _, r := range []struct {
		method, path string
		bad          bool
		header       []string
		status       int
	}{
		{http.MethodPost, "/goods-stock/1", false, []string{"X-Request-ID", "openapi-1", "X-User-ID", "alice"}, 200}, // the replay
		{http.MethodGet, "/goods-stock/1", false, nil, 409},                                                          // sold out
		{http.MethodGet, "/goods-stock/2", false, []string{"X-Request-Timeout-Ms", "5000", "X-User-ID", "bob"}, 200},
		{http.MethodGet, "/goods-stock/2", false, []string{"X-User-ID", "bob"}, 409},                                 // already_bought
		{http.MethodPost, "/goods-stock/2", false, []string{"X-Request-ID", "openapi-1", "X-User-ID", "alice"}, 409}, // request_id_conflict
		{http.MethodGet, "/goods-stock/4", false, nil, 409},                                                          // ended
		{http.MethodGet, "/goods-stock/01", true, nil, 400},
		{http.MethodGet, "/goods-stock/9", false, nil, 404},
		{http.MethodGet, "/goods-stock/2", true, []string{"X-Request-ID", "not valid!"}, 400},
		{http.MethodGet, "/goods-stock/2", true, []string{"X-Request-Timeout-Ms", "0"}, 400},
		{http.MethodGet, "/goods-stock/2", true, []string{"X-User-ID", "no spaces"}, 400},
		{http.MethodGet, "/orders/0", true, nil, 400},
		{http.MethodGet, "/goods/1", false, nil, 200},
		{http.MethodGet, "/goods/9", false, nil, 404},
		{http.MethodGet, "/goods", false, nil, 200},
		{http.MethodGet, "/goods?after=1&limit=1", false, nil, 200},
		{http.MethodGet, "/goods?limit=0", true, nil, 400},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), false, nil, 200},
		{http.MethodPost, fmt.Sprintf("/orders/%d/pay", order), false, nil, 200},
		{http.MethodGet, "/orders/999999", false, nil, 404},
		{http.MethodGet, "/leader", false, nil, 200},
		{http.MethodGet, "/healthz", false, nil, 200},
		{http.MethodGet, "/readyz", false, nil, 200},
		{http.MethodGet, "/metrics", false, nil, 200},
		{http.MethodGet, "/openapi.yaml", false, nil, 200},
		{http.MethodGet, "/dashboard", false, nil, 200},
		{http.MethodGet, "/dashboard/data?goods=1&history=1", false, nil, 200},
	} {
		if status, body := ask(r.method, r.path, r.bad, r.header...); status != r.status {
			t.Errorf("%s %s: %d %v, want %d", r.method, r.path, status, body, r.status)
		}
	}

	// The refusals of a shop with tokens, limits and a sale not yet open.
	secret := filepath.Join(t.TempDir(), "hs256.secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Shop(t, "stock", "set", "--goods", "3", "--stock", "5", "--start", "+1h")
	jin := s.Serve(t, "SHOP_AUTH_MODE=jwt", "SHOP_AUTH_HMACSECRETFILE="+secret, "SHOP_LIMITS_BUYERRATE=0.01", "SHOP_LIMITS_BUYERBURST=1")
	doc.Servers = openapi3.Servers{{URL: jin.URL}}
	if router, err = gorillamux.NewRouter(doc); err != nil {
		t.Fatal(err)
	}
	in = jin
	token := func(buyer string) string {
		tok, err := auth.MintHS256([]byte(strings.Repeat("k", 40)), buyer, "", "", time.Now(), time.Hour)
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
		{http.MethodPost, "/goods-stock/2", []string{"Authorization", token("carol"), "X-User-ID", "dave"}, 403, "buyer_mismatch"},
		{http.MethodPost, "/goods-stock/3", []string{"Authorization", token("erin")}, 409, "not_started"},
		{http.MethodPost, "/goods-stock/2", []string{"Authorization", token("erin")}, 429, "too_many_requests"},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), nil, 401, "unauthenticated"},
		{http.MethodGet, fmt.Sprintf("/orders/%d", order), []string{"Authorization", token("frank")}, 404, "order_not_found"},
	} {
		if status, body := ask(r.method, r.path, false, r.header...); status != r.status || body["code"] != r.code {
			t.Errorf("%s %s: %d %v, want %d %s", r.method, r.path, status, body, r.status, r.code)
		}
	}
}
