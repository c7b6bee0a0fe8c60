// Package handler is the shop's HTTP API on Gin: it parses requests, calls
// the service and maps its errors to statuses in one table.
package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// Shop is what the handler needs of the service.
type Shop interface {
	Purchase(ctx context.Context, p service.PurchaseRequest) (*service.Order, error)
	Stock(ctx context.Context, goodsNo int32) (service.StockInfo, error)
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
}

// Response is the JSON body of every answer.
type Response struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	GoodsNo int32  `json:"goodsNo,omitempty"`
	// RequestID is this request's id (the X-Request-ID header's), in
	// every answer.
	RequestID string `json:"requestId,omitempty"`
	OrderID   uint64 `json:"orderId,omitempty"`
	// OrderRequestID is the id of the request that placed the order (the
	// order endpoints').
	OrderRequestID string `json:"orderRequestId,omitempty"`
	Stock          *int32 `json:"stock,omitempty"`
	IsActive       *int16 `json:"isActive,omitempty"`
	Orders         *int64 `json:"orders,omitempty"`
	// The order endpoints' and the goods query's.
	Status         string           `json:"status,omitempty"`
	CreatedAt      *time.Time       `json:"createdAt,omitempty"`
	PaidAt         *time.Time       `json:"paidAt,omitempty"`
	ExpiredAt      *time.Time       `json:"expiredAt,omitempty"`
	OrdersByStatus map[string]int64 `json:"ordersByStatus,omitempty"`
	// The purchase's: a replay of an earlier answer, the sale window.
	Replayed  bool       `json:"replayed,omitempty"`
	UserID    string     `json:"userId,omitempty"`
	SaleStart *time.Time `json:"saleStart,omitempty"`
	SaleEnd   *time.Time `json:"saleEnd,omitempty"`
	// GET /leader's.
	Leader        *bool  `json:"leader,omitempty"`
	LeaderID      string `json:"leaderId,omitempty"`
	ParticipantID string `json:"participantId,omitempty"`
}

// errorTable maps the service's errors to HTTP answers. The messages the
// Spring seed shows its buyers stay in Chinese.
var errorTable = []struct {
	err     error
	status  int
	code    string
	message string
}{
	{service.ErrInvalidGoodsNo, http.StatusBadRequest, api.InvalidGoodsNo, "goodsNo must be a positive 32-bit integer in decimal, without leading zeros"},
	{ErrInvalidRequestID, http.StatusBadRequest, api.InvalidRequestID, "X-Request-ID must be 1-64 of A-Za-z0-9._:- (once), or absent"},
	{service.ErrInvalidUserID, http.StatusBadRequest, api.InvalidUserID, "X-User-ID (or userId) must be 1-64 of A-Za-z0-9._:- (one value), or absent"},
	{service.ErrUnauthenticated, http.StatusUnauthorized, api.Unauthenticated, "a valid bearer token is required (Authorization: Bearer <JWT>)"},
	{service.ErrBuyerMismatch, http.StatusForbidden, api.BuyerMismatch, "X-User-ID (or userId) names another buyer than the token"},
	{service.ErrTooManyRequests, http.StatusTooManyRequests, api.TooManyRequests, "too many purchases, slow down"},
	{service.ErrNotStarted, http.StatusConflict, api.NotStarted, "the sale has not started yet"},
	{service.ErrEnded, http.StatusConflict, api.Ended, "the sale has ended"},
	{service.ErrAlreadyBought, http.StatusConflict, api.AlreadyBought, "this buyer has bought this goods already: one per buyer"},
	{service.ErrRequestIDConflict, http.StatusConflict, api.RequestIDConflict, "this X-Request-ID bought another goods"},
	{service.ErrNotFound, http.StatusNotFound, api.GoodsNotFound, "指定商品不存在"},
	{service.ErrInvalidOrderID, http.StatusBadRequest, api.InvalidOrderID, "orderId must be a positive 64-bit integer"},
	{service.ErrOrderNotFound, http.StatusNotFound, api.OrderNotFound, "no such order"},
	{service.ErrOrderExpired, http.StatusConflict, api.OrderExpired, "the order was not paid in time and has expired"},
	{service.ErrSoldOut, http.StatusConflict, api.SoldOut, "库存不够"},
	{service.ErrPurchaseFailed, http.StatusConflict, api.PurchaseFailed, "抢购失败"},
	{service.ErrDuplicateRequest, http.StatusConflict, api.DuplicateRequest, "a purchase with this X-Request-ID was made already"},
	{service.ErrLockTimeout, http.StatusServiceUnavailable, api.LockTimeout, "too many buyers right now, try again"},
	{service.ErrLockLost, http.StatusServiceUnavailable, api.LockLost, "the purchase was interrupted and nothing was bought, try again"},
	{service.ErrBusy, http.StatusServiceUnavailable, api.Busy, "too many buyers are waiting, try again in a second"},
	{service.ErrCommitUnknown, http.StatusServiceUnavailable, api.OutcomeUnknown, "the purchase may or may not have been made: retry with the same X-Request-ID"},
	{service.ErrUnavailable, http.StatusServiceUnavailable, api.Unavailable, "the shop cannot reach its database or lock service, try again"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, api.Timeout, "the request took too long, try again"},
	{context.Canceled, http.StatusServiceUnavailable, api.Canceled, "the request was canceled"},
}

// ErrInvalidRequestID: the X-Request-ID header is malformed (or repeated).
// A client that sends one counts on its duplicate protection, so it is told
// rather than given a fresh id.
var ErrInvalidRequestID = errors.New("handler: malformed X-Request-ID")

// Internal errors are answered with this and logged, never shown.
const (
	codeInternal    = api.Internal
	messageInternal = "internal error"
)

// StatusOf maps an error to its status, code and message.
func StatusOf(err error) (status int, code, message string) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.status, e.code, e.message
		}
	}
	return http.StatusInternalServerError, codeInternal, messageInternal
}

type handler struct {
	logs                    *logLimiter
	shop                    Shop
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
	h := &handler{logs: newLogLimiter(time.Second, 5), shop: s.Shop, orders: s.Orders, election: s.Election, observer: s.Observer,
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
	r.RedirectTrailingSlash = false
	r.HandleMethodNotAllowed = true
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, h.recovered), h.requestID, h.accessLog)
	for _, method := range []string{http.MethodGet, http.MethodPost} { // GET as the seed and its JMeter plan
		r.Handle(method, "/goods-stock/:goodsNo", h.purchase)
		r.Handle(method, "/goods-stock/", h.purchase) // an empty goods number is a bad request, not an unknown route
	}
	r.GET("/goods/:goodsNo", h.goods)
	r.GET("/goods/", h.goods)
	if h.orders != nil {
		r.GET("/orders/:orderId", h.order)
		r.POST("/orders/:orderId/pay", h.pay)
	}
	if h.election != nil {
		r.GET("/leader", h.leader)
	}
	if s.Metrics != nil {
		r.GET("/metrics", gin.WrapH(s.Metrics))
	}
	if s.Dashboard != nil {
		r.GET("/dashboard", gin.WrapF(s.Dashboard.Page))
		r.GET("/dashboard/data", gin.WrapF(s.Dashboard.Data))
	}
	r.GET("/healthz", h.healthz)
	r.GET("/readyz", h.readyz)
	// HEAD answers what GET would, without the body (HTTP's rule), on every
	// route that only reads; a purchase is never made by HEAD.
	for _, rt := range r.Routes() {
		if rt.Method == http.MethodGet && !strings.HasPrefix(rt.Path, "/goods-stock/") {
			r.HEAD(rt.Path, rt.HandlerFunc)
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
	if s == "" || len(s) > 10 || s[0] == '0' { // one spelling per number: no leading zeros
		return 0, service.ErrInvalidGoodsNo
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, service.ErrInvalidGoodsNo
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n <= 0 {
		return 0, service.ErrInvalidGoodsNo
	}
	return int32(n), nil
}

func (h *handler) purchase(c *gin.Context) {
	start := time.Now()
	// A purchase answer is never to be cached or prefetched: GET buys.
	c.Header("Cache-Control", "no-store")
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
	rid := requestIDOf(c)
	order, err := h.shop.Purchase(c.Request.Context(), service.PurchaseRequest{
		// A request id in the request got past requestID: it is the client's.
		GoodsNo: goodsNo, RequestID: rid, ClientRequestID: len(c.Request.Header[headerRequestID]) > 0, UserID: user})
	h.observe(goodsNo, err, start)
	if err != nil {
		h.fail(c, goodsNo, err)
		return
	}
	c.JSON(http.StatusOK, Response{
		Code:      api.OK,
		Message:   fmt.Sprintf("抢购书籍:%d成功", goodsNo),
		GoodsNo:   goodsNo,
		RequestID: rid,
		OrderID:   order.ID,
		UserID:    order.UserID,
		Replayed:  order.Replayed,
	})
}

// buyer is the purchase's buyer, checked against the limits: with an
// Authenticator the token's (X-User-ID or userId may only repeat it),
// without one X-User-ID's or userId's, "" when neither is given. The client
// address's limit is checked first: it guards the token's verification too.
func (h *handler) buyer(c *gin.Context) (string, error) {
	now := time.Now()
	if h.clientLimit != nil {
		if ok, wait := h.clientLimit.Allow(c.ClientIP(), now); !ok {
			return "", &service.RateLimitError{Limit: "client", RetryAfter: wait}
		}
	}
	named, err := userID(c)
	if err != nil {
		return "", err
	}
	user := named
	if h.auth != nil {
		if user, err = h.authenticated(c); err != nil {
			return "", err
		}
		if named != "" && named != user {
			return "", service.ErrBuyerMismatch
		}
	}
	if h.buyerLimit != nil && user != "" {
		if ok, wait := h.buyerLimit.Allow(user, now); !ok {
			return "", &service.RateLimitError{Limit: "buyer", RetryAfter: wait}
		}
	}
	return user, nil
}

// authenticated is the buyer the request's bearer token proves.
func (h *handler) authenticated(c *gin.Context) (string, error) {
	vals := c.Request.Header["Authorization"]
	if len(vals) == 0 {
		return "", fmt.Errorf("%w: no bearer token", service.ErrUnauthenticated)
	}
	scheme, token, found := strings.Cut(vals[0], " ")
	if len(vals) > 1 || !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", fmt.Errorf("%w: the Authorization header is not one Bearer token", service.ErrUnauthenticated)
	}
	return h.auth.Buyer(strings.TrimSpace(token))
}

// owner is whose orders a request may read and pay: with an Authenticator
// its token's buyer, without one anyone's ("").
func (h *handler) owner(c *gin.Context) (string, error) {
	if h.auth == nil {
		return "", nil
	}
	return h.authenticated(c)
}

// userID is the buyer's id from X-User-ID or the userId query parameter,
// "" when neither is given. Both given must agree.
func userID(c *gin.Context) (string, error) {
	vals := c.Request.Header[headerUserID]
	if c.Request.URL.RawQuery != "" { // parsing an absent query would cost a map
		vals = append(slices.Clip(vals), c.QueryArray("userId")...)
	}
	if len(vals) == 0 {
		return "", nil
	}
	for _, v := range vals {
		if v != vals[0] || !ValidID(v) {
			return "", service.ErrInvalidUserID
		}
	}
	return vals[0], nil
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

func (h *handler) goods(c *gin.Context) {
	goodsNo, err := ParseGoodsNo(c.Param("goodsNo"))
	if err != nil {
		h.fail(c, 0, err)
		return
	}
	g, err := h.shop.Stock(c.Request.Context(), goodsNo)
	if err != nil {
		h.fail(c, goodsNo, err)
		return
	}
	answer(c, http.StatusOK, Response{Code: api.OK, Message: "ok", GoodsNo: goodsNo, Stock: &g.Stock, IsActive: &g.IsActive, Orders: &g.Orders,
		OrdersByStatus: g.OrdersByStatus, SaleStart: utc(g.SaleStart), SaleEnd: utc(g.SaleEnd)})
}

// utc is t in UTC, or nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
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

func (h *handler) leader(c *gin.Context) {
	leader, leaderID, self, err := h.election.Status(c.Request.Context())
	if err != nil {
		h.fail(c, 0, err)
		return
	}
	answer(c, http.StatusOK, Response{Code: api.OK, Message: "ok", Leader: &leader, LeaderID: leaderID, ParticipantID: self})
}

func (h *handler) healthz(c *gin.Context) {
	answer(c, http.StatusOK, Response{Code: api.OK, Message: "alive"})
}

func (h *handler) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	for _, ch := range h.checks {
		if err := ch.Check(ctx); err != nil {
			h.log.Warn("not ready", "check", ch.Name, "err", err)
			answer(c, http.StatusServiceUnavailable, Response{Code: api.NotReady, Message: ch.Name + " is not answering"})
			return
		}
	}
	answer(c, http.StatusOK, Response{Code: api.Ready, Message: "ready"})
}

// answer writes body as JSON with the request's id.
func answer(c *gin.Context, status int, body Response) {
	body.RequestID = requestIDOf(c)
	c.JSON(status, body)
}

// fail answers with the error's row of the table; internal errors are logged.
func (h *handler) fail(c *gin.Context, goodsNo int32, err error) {
	status, code, msg := StatusOf(err)
	switch {
	case errors.Is(err, service.ErrBusy):
		// Load shedding is the point of the bound: no log line per buyer.
		c.Header("Retry-After", "1")
	case status == http.StatusTooManyRequests:
		wait := time.Second
		var limited *service.RateLimitError
		if errors.As(err, &limited) {
			wait = limited.RetryAfter
		}
		c.Header("Retry-After", strconv.FormatInt(max(1, int64((wait+time.Second-1)/time.Second)), 10))
	case status == http.StatusUnauthorized:
		// RFC 6750: the scheme, and why when a token was sent. Never logged:
		// a flood of bad tokens is not the operator's news.
		challenge := `Bearer realm="seckill"`
		if len(c.Request.Header["Authorization"]) > 0 {
			challenge += `, error="invalid_token"`
		}
		c.Header("WWW-Authenticate", challenge)
	case status == http.StatusServiceUnavailable:
		// An outage makes every buyer fail alike: warn, a few lines a second.
		if ok, held := h.logs.allow("503 "+code, time.Now()); ok {
			h.log.Warn("request not served", "path", c.Request.URL.Path, "code", code, "err", err, "similarSuppressed", held)
		}
	case status >= 500:
		if ok, held := h.logs.allow("500 "+code, time.Now()); ok {
			h.log.Error("request failed", "path", c.Request.URL.Path, "requestId", requestIDOf(c), "err", err, "similarSuppressed", held)
		}
	}
	body := Response{Code: code, Message: msg, GoodsNo: goodsNo, RequestID: requestIDOf(c)}
	// errors.As costs an allocation, so it is asked only of the errors that
	// can carry more (not of the crowd's sold out).
	var bought *service.AlreadyBoughtError
	if errors.Is(err, service.ErrAlreadyBought) && errors.As(err, &bought) {
		body.OrderID, body.UserID = bought.Order.ID, bought.Order.UserID
	}
	var window *service.WindowError
	if (errors.Is(err, service.ErrNotStarted) || errors.Is(err, service.ErrEnded)) && errors.As(err, &window) {
		at := window.At.UTC()
		if errors.Is(err, service.ErrNotStarted) {
			body.SaleStart = &at
		} else {
			body.SaleEnd = &at
		}
	}
	c.JSON(status, body)
}

func (h *handler) recovered(c *gin.Context, rec any) {
	h.log.Error("panic in handler", "path", c.Request.URL.Path, "panic", fmt.Sprint(rec))
	c.AbortWithStatusJSON(http.StatusInternalServerError, Response{Code: codeInternal, Message: messageInternal, RequestID: requestIDOf(c)})
}

// Header names in their canonical form, so that looking one up or setting
// it does not copy the name to canonicalize it.
const (
	headerRequestID = "X-Request-Id" // X-Request-ID
	headerUserID    = "X-User-Id"    // X-User-ID
)

// ValidID reports whether s is 1-64 of A-Za-z0-9._:- (request and buyer
// ids; a token's subject too).
func ValidID(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}

// requestIDOf is the request's id, as requestID set it on the answer.
func requestIDOf(c *gin.Context) string {
	if v := c.Writer.Header()[headerRequestID]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// requestID takes the client's X-Request-ID, or makes one when there is
// none, and echoes it. It is the order row's idempotency key, compared
// exactly (case counts). A malformed or repeated header is refused with 400
// invalid_request_id, nothing done: a client that sends an id relies on it.
func (h *handler) requestID(c *gin.Context) {
	vals := c.Request.Header[headerRequestID]
	rid := ""
	if len(vals) == 1 && ValidID(vals[0]) {
		rid = vals[0]
	}
	if rid == "" {
		rid = uuid.NewString()
	}
	c.Header(headerRequestID, rid)
	if len(vals) > 0 && rid != vals[0] || len(vals) > 1 {
		h.fail(c, 0, ErrInvalidRequestID)
		c.Abort()
		return
	}
	c.Next()
}

func (h *handler) accessLog(c *gin.Context) {
	if !h.log.Enabled(c.Request.Context(), slog.LevelDebug) { // the line's arguments would cost allocations even unlogged
		c.Next()
		return
	}
	start := time.Now()
	c.Next()
	h.log.Debug("request", "method", c.Request.Method, "path", c.Request.URL.Path,
		"status", c.Writer.Status(), "duration", time.Since(start))
}
