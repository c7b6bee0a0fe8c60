// Package dashboard serves the shop's live page: one self-contained HTML
// file (no CDN: it draws its charts in SVG itself) that polls every instance
// it knows of for their numbers, and the JSON those numbers come from.
package dashboard

import (
	"bytes"
	"context"
	_ "embed" // the page
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/seckill-zk/seckill-zk/internal/metrics"
)

//go:embed page.html
var page []byte

// Source is where the numbers come from: memory only, so that a dashboard
// polling during a sale takes no lock and no query from the purchase path.
type Source interface {
	Snapshot(goodsNo int32) metrics.Snapshot
}

// Election names the leader for the page.
type Election interface {
	Status(ctx context.Context) (leader bool, leaderID, participantID string, err error)
}

// Data is one instance's answer to GET /dashboard/data.
type Data struct {
	metrics.Snapshot
	LeaderID      string `json:"leaderId,omitempty"`
	ParticipantID string `json:"participantId,omitempty"`
}

// Handler serves GET /dashboard (the page, for goods and the instances at
// peers, base URLs; none: this one) and GET /dashboard/data?goods=N.
type Handler struct {
	page     []byte
	source   Source
	election Election // may be nil
	goods    int32
}

// New returns the dashboard.
func New(source Source, election Election, peers []string, goods int32) (*Handler, error) {
	if len(peers) == 0 {
		peers = []string{""} // the page's own origin
	}
	cfg, err := json.Marshal(map[string]any{"peers": peers, "goods": goods})
	if err != nil {
		return nil, err
	}
	start, end := bytes.Index(page, []byte("/*CONFIG*/")), bytes.Index(page, []byte("/*END*/"))
	p := append(append(append([]byte{}, page[:start]...), cfg...), page[end+len("/*END*/"):]...)
	return &Handler{page: p, source: source, election: election, goods: goods}, nil
}

// Page serves the HTML.
func (h *Handler) Page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(h.page)
}

// Data serves one instance's numbers. Any origin may read them: the page of
// one instance polls the others.
func (h *Handler) Data(w http.ResponseWriter, r *http.Request) {
	goods := h.goods
	if v := r.URL.Query().Get("goods"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"code":"invalid_goods_no","message":"goods must be a positive 32-bit integer"}`))
			return
		}
		goods = int32(n)
	}
	d := Data{Snapshot: h.source.Snapshot(goods)}
	if h.election != nil {
		if _, leaderID, self, err := h.election.Status(r.Context()); err == nil {
			d.LeaderID, d.ParticipantID = leaderID, self
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	json.NewEncoder(w).Encode(d)
}
