package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/dashboard"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
)

type source struct{}

func (source) Snapshot(int32) metrics.Snapshot { return metrics.Snapshot{Sampled: true} }
func (source) History(int32) []metrics.Point   { return nil }
func (source) Watch(int32) bool                { return true }

// The data is readable cross-origin by the pages of dashboard.peers only.
func TestDataIsReadableByPeersOnly(t *testing.T) {
	exists := func(context.Context, int32) (bool, error) { return true, nil }
	h, err := dashboard.New(source{}, nil, exists, []string{"", "http://10.0.0.2:8080", "https://shop-3.example/"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ origin, allowed string }{
		{"http://10.0.0.2:8080", "http://10.0.0.2:8080"},
		{"https://shop-3.example", "https://shop-3.example"},
		{"https://evil.example", ""},
		{"http://10.0.0.2:8081", ""},
		{"", ""},
	} {
		req := httptest.NewRequest(http.MethodGet, "/dashboard/data?goods=1", nil)
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		rec := httptest.NewRecorder()
		h.Data(rec, req)
		if rec.Code != 200 {
			t.Fatalf("origin %q: %d", tc.origin, rec.Code)
		}
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tc.allowed {
			t.Errorf("origin %q: Access-Control-Allow-Origin %q, want %q", tc.origin, got, tc.allowed)
		}
		if rec.Header().Get("Vary") != "Origin" {
			t.Errorf("origin %q: no Vary: Origin", tc.origin)
		}
	}
	if _, err := dashboard.New(source{}, nil, exists, []string{"shop-2:8080"}, 1); err == nil {
		t.Error("a peer without a scheme accepted")
	}
}

// Readers of the dashboard (anyone, no token) cannot spend the metric
// labels: after 40 goods asked for through /dashboard/data, a goods that
// then sells still gets a label of its own, and the goods asked for are
// sampled for the page without one. Against the code that tracked every
// goods the page asked for, the goods that sells counted under "other".
func TestDashboardReadersCannotTakeTheGoodsLabels(t *testing.T) {
	m := metrics.New("seed", nil)
	exists := func(context.Context, int32) (bool, error) { return true, nil }
	h, err := dashboard.New(m, nil, exists, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for g := 1000; g < 1040; g++ {
		rec := httptest.NewRecorder()
		h.Data(rec, httptest.NewRequest(http.MethodGet, fmt.Sprintf("/dashboard/data?goods=%d", g), nil))
		if rec.Code != 200 {
			t.Fatalf("goods %d: %d %s", g, rec.Code, rec.Body)
		}
	}
	m.Purchased(7, "ok", time.Millisecond)
	if !m.Tracked(7) {
		t.Fatal("a goods that sold after the dashboard was read for 40 goods has no label of its own")
	}
	if m.Tracked(1000) {
		t.Error("a goods the dashboard asked for got a label")
	}
	if !slices.Contains(m.Goods(), 1000) || !slices.Contains(m.Goods(), 7) {
		t.Errorf("sampled goods %v: want the watched 1000 and the sold 7", m.Goods())
	}
}

// Each number of /dashboard/data is read in one spelling, once: since
// that is not a number was read as 0 (the whole history) before.
func TestDashboardDataRefusesBadNumbers(t *testing.T) {
	exists := func(context.Context, int32) (bool, error) { return true, nil }
	h, err := dashboard.New(source{}, nil, exists, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"goods=+5", "goods=05", "goods=5&goods=6", "goods=0", "goods=", "goods=2147483648",
		"history=1&since=abc", "history=1&since=-1", "history=1&since=01", "history=1&since=1&since=2", "since="} {
		rec := httptest.NewRecorder()
		h.Data(rec, httptest.NewRequest(http.MethodGet, "/dashboard/data?"+q, nil))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("?%s: %d, want 400", q, rec.Code)
		}
	}
	for _, q := range []string{"goods=5", "history=1&since=0", "history=1&since=1764300000000"} {
		rec := httptest.NewRecorder()
		h.Data(rec, httptest.NewRequest(http.MethodGet, "/dashboard/data?"+q, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("?%s: %d, want 200", q, rec.Code)
		}
	}
}

// A goods the shop cannot look up (its database away) is answered as every
// route answers it, with nothing of the error: not the address it dialled.
func TestDashboardDataTellsNothingOfAnError(t *testing.T) {
	exists := func(context.Context, int32) (bool, error) {
		return false, errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")
	}
	h, err := dashboard.New(notSampled{}, nil, exists, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.Data(rec, httptest.NewRequest(http.MethodGet, "/dashboard/data?goods=7", nil))
	var body struct{ Code, Message string }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || body.Code != api.Unavailable || body.Message != api.MessageUnavailable {
		t.Errorf("%d %+v, want 503 unavailable with the shop's one message", rec.Code, body)
	}
}

// notSampled is a source that has sampled no goods yet.
type notSampled struct{ source }

func (notSampled) Snapshot(int32) metrics.Snapshot { return metrics.Snapshot{} }
