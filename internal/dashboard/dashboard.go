// Package dashboard serves the shop's live page: one self-contained HTML
// file (no CDN: it draws its charts in SVG itself) that polls every instance
// it knows of for their numbers, and the JSON those numbers come from.
package dashboard

import (
	"bytes"
	"context"
	_ "embed" // the page
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
)

//go:embed page.html
var page []byte

// Source is where the numbers come from: memory only, so that a dashboard
// polling during a sale takes no lock and no query from the purchase path.
type Source interface {
	Snapshot(goodsNo int32) metrics.Snapshot
	// History is the goods' last quarter of an hour, a point a second.
	History(goodsNo int32) []metrics.Point
	// Watch has the sampler sample the goods for the page a while,
	// without giving it a metric label (see metrics.Metrics.Watch).
	Watch(goodsNo int32) bool
}

// Exists tells whether a goods exists (a query: asked only for a goods the
// instance has not sampled).
type Exists func(ctx context.Context, goodsNo int32) (bool, error)

// Election names the leader for the page.
type Election interface {
	Status(ctx context.Context) (leader bool, leaderID, participantID string, err error)
}

// Data is one instance's answer to GET /dashboard/data.
type Data struct {
	metrics.Snapshot
	// History: with ?history=1, the goods' points so far.
	History       []metrics.Point `json:"history,omitempty"`
	LeaderID      string          `json:"leaderId,omitempty"`
	ParticipantID string          `json:"participantId,omitempty"`
}

// Handler serves GET /dashboard (the page, for goods and the instances at
// peers, base URLs; none: this one) and GET /dashboard/data?goods=N, with
// &history=1 the goods' points sampled so far (&since=MS: those after it):
// a page opened mid-sale draws the sale from its start.
type Handler struct {
	page     []byte
	source   Source
	election Election // may be nil
	exists   Exists
	goods    int32
	origins  map[string]bool // the peers' origins: who may read Data cross-origin
}

// New returns the dashboard.
func New(source Source, election Election, exists Exists, peers []string, goods int32) (*Handler, error) {
	if len(peers) == 0 {
		peers = []string{""} // the page's own origin
	}
	cfg, err := json.Marshal(map[string]any{"peers": peers, "goods": goods})
	if err != nil {
		return nil, err
	}
	start, end := bytes.Index(page, []byte("/*CONFIG*/")), bytes.Index(page, []byte("/*END*/"))
	p := append(append(append([]byte{}, page[:start]...), cfg...), page[end+len("/*END*/"):]...)
	origins := map[string]bool{}
	for _, peer := range peers {
		if peer == "" {
			continue // the page's own origin: not cross-origin
		}
		u, err := url.Parse(peer)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("dashboard: peer %q is not a base URL (http://host:port)", peer)
		}
		origins[strings.ToLower(u.Scheme+"://"+u.Host)] = true
	}
	return &Handler{page: p, source: source, election: election, exists: exists, goods: goods, origins: origins}, nil
}

// allowOrigin lets the page of a peer (an origin of dashboard.peers) read
// the answer; any other origin's page may not.
func (h *Handler) allowOrigin(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	if o := r.Header.Get("Origin"); o != "" && h.origins[strings.ToLower(o)] {
		w.Header().Set("Access-Control-Allow-Origin", o)
	}
}

// Page serves the HTML.
func (h *Handler) Page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(h.page)
}

// Data serves one instance's numbers. The pages of the peers may read them
// cross-origin (the page of one instance polls the others), no other's.
func (h *Handler) Data(w http.ResponseWriter, r *http.Request) {
	h.allowOrigin(w, r)
	goods := h.goods
	if v, ok := r.URL.Query()["goods"]; ok {
		n, ok := api.Canonical(v[0], math.MaxInt32)
		if !ok || n == 0 || len(v) != 1 {
			fail(w, http.StatusBadRequest, api.InvalidGoodsNo, "goods must be one positive 32-bit integer, written plainly")
			return
		}
		goods = int32(n)
	}
	d := Data{Snapshot: h.source.Snapshot(goods)}
	if !d.Sampled {
		// Not sampled here yet: a goods that does not exist is not charted
		// as one with no stock; one that does is sampled from now on.
		ok, err := h.exists(r.Context(), goods)
		switch {
		case err != nil:
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusServiceUnavailable, api.Unavailable, api.MessageUnavailable) // as every route says it: the error's text is the shop's
			return
		case !ok:
			fail(w, http.StatusNotFound, api.GoodsNotFound, "指定商品不存在")
			return
		}
		h.source.Watch(goods)
	}
	var since int64
	if v, ok := r.URL.Query()["since"]; ok {
		n, ok := api.Canonical(v[0], math.MaxInt64)
		if !ok || len(v) != 1 {
			fail(w, http.StatusBadRequest, api.InvalidPage, "since must be one non-negative integer (milliseconds since the epoch), written plainly")
			return
		}
		since = n
	}
	if r.URL.Query().Get("history") == "1" {
		for _, p := range h.source.History(goods) {
			if p.Time > since {
				d.History = append(d.History, p)
			}
		}
	}
	if h.election != nil {
		if _, leaderID, self, err := h.election.Status(r.Context()); err == nil {
			d.LeaderID, d.ParticipantID = leaderID, self
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(d)
}

// fail answers an error as the shop's API does: JSON with a code.
func fail(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code, "message": message})
}
