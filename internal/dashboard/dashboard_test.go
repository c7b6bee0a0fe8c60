package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/dashboard"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
)

type source struct{}

func (source) Snapshot(int32) metrics.Snapshot { return metrics.Snapshot{Sampled: true} }
func (source) History(int32) []metrics.Point   { return nil }
func (source) Track(int32) bool                { return true }

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
