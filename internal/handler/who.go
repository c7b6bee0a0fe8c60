package handler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// buyer is the purchase's buyer, checked against the limits: with an
// Authenticator the token's (X-User-ID or userId may only repeat it),
// without one X-User-ID's or userId's, "" when neither is given. The client
// address's limit is checked first: it guards the token's verification too.
func (h *handler) buyer(c *gin.Context) (string, error) {
	now := time.Now()
	if err := h.limitClient(c, now); err != nil {
		return "", err
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
// its token's buyer, without one anyone's (""). The client address's limit
// (limited, on the route) guards the token's verification, as on a purchase.
func (h *handler) owner(c *gin.Context) (string, error) {
	if h.auth == nil {
		return "", nil
	}
	return h.authenticated(c)
}

// limited is the middleware of the routes a client calls besides a
// purchase (which checks the limit itself, before its buyer's): a client
// over its address's limit is answered 429 before the route's work.
func (h *handler) limited(c *gin.Context) {
	if err := h.limitClient(c, time.Now()); err != nil {
		h.fail(c, 0, err)
		c.Abort()
	}
}

// isLimited: the route path is under the client limit (see limited).
func (h *handler) isLimited(path string) bool {
	switch path {
	case "/metrics", "/openapi.yaml", "/healthz", "/readyz":
		return false
	}
	return true
}

// limitClient checks the client address's limit, if there is one.
func (h *handler) limitClient(c *gin.Context, now time.Time) error {
	if h.clientLimit != nil {
		if ok, wait := h.clientLimit.Allow(c.ClientIP(), now); !ok {
			return &service.RateLimitError{Limit: "client", RetryAfter: wait}
		}
	}
	return nil
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
