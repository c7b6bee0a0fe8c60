package handler

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// Purchase answers without reflection.
//
// A purchase's answer sets a few fields of Response: the code, the message,
// the goods, the request id, and for a sale the order, the buyer and
// whether it is a replay. encoding/json (gin's c.JSON) walks all of
// Response's fields by reflection for every answer; appendPurchase writes
// those few directly, byte for byte what encoding/json writes (the test
// TestPurchaseAnswersEncodeAsEncodingJSONDoes compares them), and leaves
// everything else to writeJSON's fallback, c.JSON.

const contentTypeJSON = "application/json; charset=utf-8" // gin's c.JSON's

// writeJSON answers body as JSON: by appendPurchase when it can, by gin's
// c.JSON otherwise.
func writeJSON(c *gin.Context, status int, body *Response) {
	buf := jsonBuffers.Get().(*[]byte)
	defer jsonBuffers.Put(buf)
	b, ok := appendPurchase((*buf)[:0], body)
	if !ok {
		c.JSON(status, *body)
		return
	}
	*buf = b
	c.Writer.Header()["Content-Type"] = contentTypeJSONValue
	c.Status(status)
	_, _ = c.Writer.Write(b) // a failed write is the client's gone: nothing to answer
}

// jsonBuffers are writeJSON's: the answer is copied into the connection's
// buffer by Write, and the buffer is free again once it returns.
var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

var contentTypeJSONValue = []string{contentTypeJSON}

// appendPurchase appends body's JSON to dst when body sets only the fields
// of a purchase's answer and its strings need no escaping; ok is false
// otherwise, and dst is then to be ignored.
func appendPurchase(dst []byte, body *Response) (_ []byte, ok bool) {
	if !body.onlyPurchaseFields() || !plainJSON(body.Code) || !plainJSON(body.Message) ||
		!plainJSON(body.RequestID) || !plainJSON(body.UserID) {
		return dst, false
	}
	// The field order and the omitempty rules are Response's.
	dst = append(dst, `{"code":"`...)
	dst = append(dst, body.Code...)
	dst = append(dst, `","message":"`...)
	dst = append(dst, body.Message...)
	dst = append(dst, '"')
	if body.GoodsNo != 0 {
		dst = append(dst, `,"goodsNo":`...)
		dst = strconv.AppendInt(dst, int64(body.GoodsNo), 10)
	}
	if body.RequestID != "" {
		dst = append(dst, `,"requestId":"`...)
		dst = append(dst, body.RequestID...)
		dst = append(dst, '"')
	}
	if body.OrderID != 0 {
		dst = append(dst, `,"orderId":`...)
		dst = strconv.AppendUint(dst, body.OrderID, 10)
	}
	if body.Replayed {
		dst = append(dst, `,"replayed":true`...)
	}
	if body.UserID != "" {
		dst = append(dst, `,"userId":"`...)
		dst = append(dst, body.UserID...)
		dst = append(dst, '"')
	}
	return append(dst, '}'), true
}

// onlyPurchaseFields reports whether r sets no field but those
// appendPurchase writes.
func (r *Response) onlyPurchaseFields() bool {
	return r.OrderRequestID == "" && r.Stock == nil && r.IsActive == nil && r.Orders == nil &&
		r.Status == "" && r.CreatedAt == nil && r.PaidAt == nil && r.ExpiredAt == nil &&
		r.OrdersByStatus == nil && r.OrdersAgeMs == nil && r.SaleStart == nil && r.SaleEnd == nil &&
		r.Leader == nil && r.LeaderID == "" && r.ParticipantID == "" && r.Goods == nil && r.Next == 0 &&
		r.Place == "" && r.Ahead == nil && r.WaitMs == nil && r.Version == ""
}

// plainJSON reports whether encoding/json writes s between its quotes as
// it is: valid UTF-8 without control characters, '"', '\\', the HTML
// characters it escapes ('<', '>', '&') or U+2028 and U+2029.
func plainJSON(s string) bool {
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b < 0x20 || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}
