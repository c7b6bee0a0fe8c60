// Package handler is the shop's HTTP API on Gin: it parses requests, calls
// the service and maps its errors to statuses in one table.
package handler

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/buildinfo"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// Shop is what the handler needs of the service.
type Shop interface {
	Purchase(ctx context.Context, p service.PurchaseRequest) (*service.Order, error)
	Stock(ctx context.Context, goodsNo int32) (service.StockInfo, error)
}

// Catalog is what the handler needs to list the goods on sale.
type Catalog interface {
	List(ctx context.Context, after int32, limit int) (page []service.Listed, next int32, err error)
}

// Orders is what the handler needs of the order life cycle. owner is the
// authenticated buyer, whose orders alone are read and paid; "" (no
// Authenticator) reads and pays any.
type Orders interface {
	Get(ctx context.Context, id uint64, owner string) (service.Order, error)
	Pay(ctx context.Context, id uint64, owner string) (service.Order, error)
}

// Authenticator verifies a bearer token and names the buyer it proves.
type Authenticator interface {
	// Buyer returns the token's buyer, or an error wrapping
	// service.ErrUnauthenticated.
	Buyer(token string) (string, error)
}

// Limiter paces requests per key (a buyer, a client address).
type Limiter interface {
	// Allow takes one request of key's allowance at now, or says how long
	// until there is one.
	Allow(key string, now time.Time) (ok bool, retryAfter time.Duration)
}

// Election tells who leads the instances (and sweeps expired orders).
type Election interface {
	// Status reports whether this instance leads, the leader's participant
	// id ("" when nobody leads) and this instance's.
	Status(ctx context.Context) (leader bool, leaderID, participantID string, err error)
}

// Observer hears every answered purchase: its goods number (0 when the
// request had none), the answer's code and how long it took.
type Observer interface {
	Purchased(goodsNo int32, outcome string, d time.Duration)
}

// Dashboard serves the live page and its data.
type Dashboard interface {
	Page(w http.ResponseWriter, r *http.Request)
	Data(w http.ResponseWriter, r *http.Request)
}

// Services are what the handler serves. Everything but Shop may be nil, and
// its endpoints then do not exist.
type Services struct {
	Shop      Shop
	Catalog   Catalog // GET /goods; nil: no such route
	Orders    Orders
	Election  Election
	Observer  Observer
	Metrics   http.Handler // GET /metrics
	Dashboard Dashboard    // GET /dashboard, /dashboard/data
	// Auth, when set, is asked of every purchase and order request: a
	// bearer token names the buyer, and a buyer reads and pays only its own
	// orders. nil: the anonymous demo, where X-User-ID names a buyer and
	// orders are open to anyone.
	Auth Authenticator
	// BuyerLimit and ClientLimit, when set, pace purchases per buyer and
	// per client address, before anything else is asked of the shop.
	BuyerLimit, ClientLimit Limiter
	// TrustedProxies are the addresses and CIDRs of the proxies whose
	// X-Forwarded-For names the client; none: the client is the
	// connection's peer.
	TrustedProxies []string
}

// Check is a readiness check of a dependency.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
	// Warning, if set, is said in /readyz's answer while the check
	// passes: a setting that works but leaves the shop exposed.
	Warning string
}

type handler struct {
	logs                    *logLimiter
	shop                    Shop
	catalog                 Catalog
	orders                  Orders
	election                Election
	observer                Observer
	auth                    Authenticator
	buyerLimit, clientLimit Limiter
	checks                  []Check
	log                     *slog.Logger
}

// New returns the HTTP handler of the shop.
func New(s Services, log *slog.Logger, checks ...Check) http.Handler {
	h := &handler{logs: newLogLimiter(time.Second, 5), shop: s.Shop, catalog: s.Catalog, orders: s.Orders, election: s.Election, observer: s.Observer,
		auth: s.Auth, buyerLimit: s.BuyerLimit, clientLimit: s.ClientLimit, checks: checks, log: log}
	r := gin.New()
	// Gin believes every proxy by default: X-Forwarded-For from anyone
	// would pick the address the client limit counts.
	if err := r.SetTrustedProxies(s.TrustedProxies); err != nil {
		log.Error("server.trustedProxies refused: no proxy is trusted", "err", err)
		if err := r.SetTrustedProxies(nil); err != nil {
			panic(err) // nil is always accepted
		}
	}
	// X-Forwarded-For alone names the client behind a trusted proxy (gin
	// would take X-Real-IP too, which a proxy that sets only the first
	// passes on from the client as it came).
	r.RemoteIPHeaders = []string{"X-Forwarded-For"}
	r.RedirectTrailingSlash = false
	r.HandleMethodNotAllowed = true
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, h.recovered), h.requestID, h.accessLog)
	for _, method := range []string{http.MethodGet, http.MethodPost} { // GET as the seed and its JMeter plan
		r.Handle(method, "/goods-stock/:goodsNo", h.purchase)
		r.Handle(method, "/goods-stock/", h.purchase) // an empty goods number is a bad request, not an unknown route
	}
	// Every other route a client calls is under the client address's
	// limit too (a read may cost a query; a token's check costs CPU): only
	// the probes and the scrape are not.
	r.GET("/goods/:goodsNo", h.limited, h.goods)
	r.GET("/goods/", h.limited, h.goods)
	if h.catalog != nil {
		r.GET("/goods", h.limited, h.listGoods)
	}
	if h.orders != nil {
		r.GET("/orders/:orderId", h.limited, h.order)
		r.POST("/orders/:orderId/pay", h.limited, h.pay)
	}
	if h.election != nil {
		r.GET("/leader", h.limited, h.leader)
	}
	if s.Metrics != nil {
		r.GET("/metrics", gin.WrapH(s.Metrics))
	}
	if s.Dashboard != nil {
		r.GET("/dashboard", h.limited, gin.WrapF(s.Dashboard.Page))
		r.GET("/dashboard/data", h.limited, gin.WrapF(s.Dashboard.Data))
	}
	r.GET("/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml", api.OpenAPI) })
	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)
	// HEAD answers what GET would, without the body (HTTP's rule), on every
	// route that only reads; a purchase is never made by HEAD.
	for _, rt := range r.Routes() {
		if rt.Method == http.MethodGet && !strings.HasPrefix(rt.Path, "/goods-stock/") {
			if h.isLimited(rt.Path) {
				r.HEAD(rt.Path, h.limited, rt.HandlerFunc)
			} else {
				r.HEAD(rt.Path, rt.HandlerFunc)
			}
		}
	}
	r.NoRoute(func(c *gin.Context) {
		answer(c, http.StatusNotFound, Response{Code: api.NoRoute, Message: "no such endpoint"})
	})
	r.NoMethod(func(c *gin.Context) {
		answer(c, http.StatusMethodNotAllowed, Response{Code: api.MethodNotAllowed, Message: "method not allowed"})
	})
	return r
}

// ParseGoodsNo accepts a positive 32-bit decimal integer in its canonical
// form and nothing else: no sign, no spaces, no leading zeros, no empty
// string, no overflow. /goods-stock/01 is not another name of goods 1.
func ParseGoodsNo(s string) (int32, error) {
	n, ok := api.Canonical(s, math.MaxInt32)
	if !ok || n == 0 {
		return 0, service.ErrInvalidGoodsNo
	}
	return int32(n), nil
}

// noStore is the Cache-Control of every purchase answer; never changed.
var noStore = []string{"no-store"}

func (h *handler) purchase(c *gin.Context) {
	start := time.Now()
	// Never cached or prefetched (GET buys); when the buyer arrived, as the
	// shop orders buyers. The shared value saves an allocation an answer.
	hdr := c.Writer.Header()
	hdr["Cache-Control"] = noStore
	var at [32]byte
	hdr[api.HeaderArrivedAt] = []string{string(start.UTC().AppendFormat(at[:0], api.ArrivedAtLayout))}
	goodsNo, err := ParseGoodsNo(c.Param("goodsNo"))
	if err != nil {
		h.observe(0, err, start)
		h.fail(c, 0, err)
		return
	}
	user, err := h.buyer(c)
	if err != nil {
		h.observe(goodsNo, err, start)
		h.fail(c, goodsNo, err)
		return
	}
	ctx, cancel, err := requestDeadline(c)
	if err != nil {
		h.observe(goodsNo, err, start)
		h.fail(c, goodsNo, err)
		return
	}
	defer cancel()
	rid := requestIDOf(c)
	order, err := h.shop.Purchase(ctx, service.PurchaseRequest{
		// A request id in the request got past requestID: it is the client's.
		GoodsNo: goodsNo, RequestID: rid, ClientRequestID: len(c.Request.Header[headerRequestID]) > 0, UserID: user,
		Place: placeOf(c, goodsNo), Client: c.ClientIP(), Arrived: start})
	h.observe(goodsNo, err, start)
	if err != nil {
		h.fail(c, goodsNo, err)
		return
	}
	writeJSON(c, http.StatusOK, &Response{
		Code:      api.OK,
		Message:   "抢购书籍:" + strconv.Itoa(int(goodsNo)) + "成功",
		GoodsNo:   goodsNo,
		RequestID: rid,
		OrderID:   order.ID,
		UserID:    order.UserID,
		Replayed:  order.Replayed,
	})
}

// headerTimeout is how long the client will wait for this purchase, in
// milliseconds: after that the shop sells it nothing (503 timeout, if it
// is still there to hear it), as for a client whose connection closed.
const headerTimeout = "X-Request-Timeout-Ms"

// maxRequestTimeout bounds X-Request-Timeout-Ms: ten minutes.
const maxRequestTimeout = 600_000

// requestDeadline is the request's context, with the deadline the client
// gave in X-Request-Timeout-Ms, if any.
func requestDeadline(c *gin.Context) (context.Context, context.CancelFunc, error) {
	ctx := c.Request.Context()
	vs := c.Request.Header[headerTimeout]
	if len(vs) == 0 {
		return ctx, func() {}, nil
	}
	ms, err := ParseTimeoutMs(vs)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
	return ctx, cancel, nil
}

// ParseTimeoutMs reads X-Request-Timeout-Ms's values: exactly one whole
// number of milliseconds, 1 to 600000, in decimal without a sign or
// leading zeros.
func ParseTimeoutMs(vs []string) (int, error) {
	if len(vs) != 1 || len(vs[0]) == 0 || len(vs[0]) > 6 || vs[0][0] == '0' {
		return 0, ErrInvalidTimeout
	}
	n := 0
	for _, r := range vs[0] {
		if r < '0' || r > '9' {
			return 0, ErrInvalidTimeout
		}
		n = 10*n + int(r-'0')
	}
	if n > maxRequestTimeout {
		return 0, ErrInvalidTimeout
	}
	return n, nil
}

// observe tells the observer, if any, of an answered purchase.
func (h *handler) observe(goodsNo int32, err error, start time.Time) {
	if h.observer == nil {
		return
	}
	outcome := api.OK
	if err != nil {
		_, outcome, _ = StatusOf(err)
	}
	h.observer.Purchased(goodsNo, outcome, time.Since(start))
}

// ParseOrderID accepts a positive 64-bit decimal integer in its canonical
// form (no sign, no leading zeros) and nothing else.
func ParseOrderID(s string) (uint64, error) {
	if s == "" || len(s) > 20 || s[0] < '1' || s[0] > '9' {
		return 0, service.ErrInvalidOrderID
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, service.ErrInvalidOrderID
	}
	return n, nil
}

func (h *handler) order(c *gin.Context) {
	h.orderAction(c, h.orders.Get)
}

func (h *handler) pay(c *gin.Context) {
	h.orderAction(c, h.orders.Pay)
}

func (h *handler) orderAction(c *gin.Context, action func(context.Context, uint64, string) (service.Order, error)) {
	owner, err := h.owner(c)
	if err != nil {
		h.fail(c, 0, err)
		return
	}
	id, err := ParseOrderID(c.Param("orderId"))
	if err != nil {
		h.fail(c, 0, err)
		return
	}
	o, err := action(c.Request.Context(), id, owner)
	if err != nil {
		h.fail(c, o.GoodsNo, err)
		return
	}
	answer(c, http.StatusOK, orderResponse(o))
}

func orderResponse(o service.Order) Response {
	return Response{Code: api.OK, Message: o.Status, GoodsNo: o.GoodsNo, OrderRequestID: o.RequestID, OrderID: o.ID,
		Status: o.Status, CreatedAt: &o.CreatedAt, PaidAt: o.PaidAt, ExpiredAt: o.ExpiredAt}
}

// statusTimeout bounds the answers about the shop's own state (/leader,
// /readyz): a ZooKeeper or MySQL that does not answer is a 503 soon, not a
// request that hangs as long as they are gone.
const statusTimeout = 3 * time.Second

func (h *handler) leader(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), statusTimeout)
	defer cancel()
	leader, leaderID, self, err := h.election.Status(ctx)
	if err != nil {
		h.fail(c, 0, err)
		return
	}
	answer(c, http.StatusOK, Response{Code: api.OK, Message: "ok", Leader: &leader, LeaderID: leaderID, ParticipantID: self})
}

func (h *handler) healthz(c *gin.Context) {
	answer(c, http.StatusOK, Response{Code: api.OK, Message: "alive", Version: buildinfo.Version})
}

func (h *handler) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), statusTimeout)
	defer cancel()
	for _, ch := range h.checks {
		if err := ch.Check(ctx); err != nil {
			h.log.Warn("not ready", "check", ch.Name, "err", err)
			c.Header("Retry-After", "1")
			answer(c, http.StatusServiceUnavailable, Response{Code: api.NotReady, Message: ch.Name + ": not ready (the shop's log says why)"})
			return
		}
	}
	msg := "ready"
	for _, ch := range h.checks {
		if ch.Warning != "" {
			msg += "; warning: " + ch.Name + ": " + ch.Warning
		}
	}
	answer(c, http.StatusOK, Response{Code: api.Ready, Message: msg})
}
