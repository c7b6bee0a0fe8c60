package handler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

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
	IsActive       *bool  `json:"isActive,omitempty"` // the seed's smallint column, as a boolean
	Orders         *int64 `json:"orders,omitempty"`
	// The order endpoints' and the goods query's.
	Status         string           `json:"status,omitempty"`
	CreatedAt      *time.Time       `json:"createdAt,omitempty"`
	PaidAt         *time.Time       `json:"paidAt,omitempty"`
	ExpiredAt      *time.Time       `json:"expiredAt,omitempty"`
	OrdersByStatus map[string]int64 `json:"ordersByStatus,omitempty"`
	// OrdersAgeMs is how old the goods query's order counts are: an
	// instance counts a goods' orders at most once a second.
	OrdersAgeMs *int64 `json:"ordersAgeMs,omitempty"`
	// The purchase's: a replay of an earlier answer, the sale window.
	Replayed  bool       `json:"replayed,omitempty"`
	UserID    string     `json:"userId,omitempty"`
	SaleStart *time.Time `json:"saleStart,omitempty"`
	SaleEnd   *time.Time `json:"saleEnd,omitempty"`
	// GET /leader's.
	Leader        *bool  `json:"leader,omitempty"`
	LeaderID      string `json:"leaderId,omitempty"`
	ParticipantID string `json:"participantId,omitempty"`
	// The waiting room's: the buyer's place (send it back as X-Place, or
	// the cookie), the buyers ahead of it and the expected wait.
	Place  string `json:"place,omitempty"`
	Ahead  *int   `json:"ahead,omitempty"`
	WaitMs *int64 `json:"waitMs,omitempty"`
	// GET /goods': a page of the goods on sale, and the after of the next
	// page (none on the last).
	Goods []GoodsItem `json:"goods,omitempty"`
	Next  int32       `json:"next,omitempty"`
	// GET /healthz's: the shop's release.
	Version string `json:"version,omitempty"`
}

// GoodsItem is one goods of GET /goods.
type GoodsItem struct {
	GoodsNo   int32      `json:"goodsNo"`
	Stock     int32      `json:"stock"`
	IsActive  bool       `json:"isActive"`
	SaleStart *time.Time `json:"saleStart,omitempty"`
	SaleEnd   *time.Time `json:"saleEnd,omitempty"`
	// OrdersByStatus counts the goods' orders: unpaid, paid, expired;
	// OrdersAgeMs says how old that count is.
	OrdersByStatus map[string]int64 `json:"ordersByStatus"`
	OrdersAgeMs    int64            `json:"ordersAgeMs"`
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
	{service.ErrInvalidPage, http.StatusBadRequest, api.InvalidPage, "after must be a goods number ≥ 0 and limit 1–1000 (default 100)"},
	{ErrInvalidTimeout, http.StatusBadRequest, api.InvalidTimeout, "X-Request-Timeout-Ms must be a whole number of milliseconds from 1 to 600000 (once), or absent"},
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
	{service.ErrQueued, http.StatusServiceUnavailable, api.Queued, "you have a place in the queue: come back after Retry-After with it (the cookie, or X-Place)"},
	{service.ErrCommitUnknown, http.StatusServiceUnavailable, api.OutcomeUnknown, "the purchase may or may not have been made: retry with the same X-Request-ID"},
	{service.ErrUnavailable, http.StatusServiceUnavailable, api.Unavailable, api.MessageUnavailable},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, api.Timeout, "the request took too long, try again"},
	{context.Canceled, http.StatusServiceUnavailable, api.Canceled, "the request was canceled"},
}

// ErrInvalidRequestID: the X-Request-ID header is malformed (or repeated).
// A client that sends one counts on its duplicate protection, so it is told
// rather than given a fresh id.
var ErrInvalidRequestID = errors.New("handler: malformed X-Request-ID")

// ErrInvalidTimeout: the X-Request-Timeout-Ms header is malformed (or
// repeated). A client that sends one counts on not being sold to after it,
// so it is told rather than ignored.
var ErrInvalidTimeout = errors.New("handler: malformed X-Request-Timeout-Ms")

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

// answer writes body as JSON with the request's id.
func answer(c *gin.Context, status int, body Response) {
	body.RequestID = requestIDOf(c)
	writeJSON(c, status, &body)
}

// fail answers with the error's row of the table; internal errors are logged.
func (h *handler) fail(c *gin.Context, goodsNo int32, err error) {
	status, code, msg := StatusOf(err)
	switch {
	case errors.Is(err, service.ErrBusy):
		// Load shedding is the point of the bound: no log line per buyer.
		c.Header("Retry-After", "1")
	case errors.Is(err, service.ErrQueued):
		// Set below, with the place.
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
		// Every 503 says when to come back (RFC 9110 §10.2.3): a client
		// that retries at once only deepens an outage.
		c.Header("Retry-After", "1")
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
	var queued *service.QueuedError
	if errors.Is(err, service.ErrQueued) && errors.As(err, &queued) {
		setPlace(c, goodsNo, queued, &body)
	}
	var ahead *service.SoldOutAheadError
	if errors.Is(err, service.ErrSoldOut) && errors.As(err, &ahead) {
		body.Ahead = &ahead.Ahead // sold out before the buyer's turn: a forecast
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
	writeJSON(c, status, &body)
}

func (h *handler) recovered(c *gin.Context, rec any) {
	h.log.Error("panic in handler", "path", c.Request.URL.Path, "panic", fmt.Sprint(rec))
	c.AbortWithStatusJSON(http.StatusInternalServerError, Response{Code: codeInternal, Message: messageInternal, RequestID: requestIDOf(c)})
}

// headerPlace carries a waiting room's place, both ways; the cookie
// placeCookie+goodsNo carries it for a browser.
const (
	headerPlace = "X-Place"
	placeCookie = "seckill_place_"
)

// setPlace answers a buyer queued in the waiting room: its place in the
// body, in X-Place and in a cookie of the goods' purchase path (HttpOnly,
// SameSite=Lax: sent back by the browser on its next purchase, to this
// path only), when to come back (Retry-After in whole seconds, at least 1;
// X-Retry-After-Ms to the millisecond), the count ahead and the wait.
func setPlace(c *gin.Context, goodsNo int32, q *service.QueuedError, body *Response) {
	body.Place = q.Token
	ahead, waitMs := q.Ahead, q.Wait.Milliseconds()
	body.Ahead, body.WaitMs = &ahead, &waitMs
	if q.StartsAt != nil {
		at := q.StartsAt.UTC()
		body.SaleStart = &at
	}
	c.Header(headerPlace, q.Token)
	c.Header("Retry-After", strconv.FormatInt(max(1, int64((q.RetryAfter+time.Second-1)/time.Second)), 10))
	c.Header("X-Retry-After-Ms", strconv.FormatInt(max(1, q.RetryAfter.Milliseconds()), 10))
	http.SetCookie(c.Writer, &http.Cookie{Name: placeCookie + strconv.Itoa(int(goodsNo)), Value: q.Token,
		Path: "/goods-stock/" + strconv.Itoa(int(goodsNo)), MaxAge: int((q.RetryAfter + 2*time.Minute).Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// placeOf is the place the request brings back for goodsNo: X-Place, or
// the goods' cookie ("" for none).
func placeOf(c *gin.Context, goodsNo int32) string {
	if vs := c.Request.Header[headerPlace]; len(vs) == 1 {
		return vs[0]
	}
	if ck, err := c.Request.Cookie(placeCookie + strconv.Itoa(int(goodsNo))); err == nil {
		return ck.Value
	}
	return ""
}
