package handler

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// Every answer appendPurchase writes is byte for byte encoding/json's (what
// gin's c.JSON writes), and it declines the answers it cannot write so.
func TestPurchaseAnswersEncodeAsEncodingJSONDoes(t *testing.T) {
	stock, at, yes := int32(3), time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), true
	written := []Response{
		{Code: "ok", Message: "抢购书籍:1成功", GoodsNo: 1, RequestID: "0193a5f0-7c1e-7d2b-9a4e-1b2c3d4e5f60", OrderID: 42},
		{Code: "ok", Message: "抢购书籍:2147483647成功", GoodsNo: math.MaxInt32, RequestID: "client.id_1:a-b", OrderID: math.MaxUint64, UserID: "buyer-7", Replayed: true},
		{Code: "sold_out", Message: "库存不够", GoodsNo: 5, RequestID: "r"},
		{Code: "already_bought", Message: "每位买家限购一件", GoodsNo: 5, RequestID: "r", OrderID: 9, UserID: "u"},
		{Code: "invalid_goods_no", Message: "goodsNo must be a positive 32-bit integer in decimal, without leading zeros"},
		{Code: "", Message: ""},
		{Code: "x", Message: "emoji \U0001F600 and é, 全角：「」"},
	}
	for _, r := range written {
		if !writesAsEncodingJSON(t, r) {
			t.Errorf("appendPurchase(%+v) declined; want it written", r)
		}
	}
	declined := []Response{
		{Code: "ok", Message: "a < b"}, // encoding/json escapes HTML characters
		{Code: "ok", Message: "a & b"},
		{Code: "ok", Message: "a > b"},
		{Code: "ok", Message: `say "hi"`},
		{Code: "ok", Message: `back\slash`},
		{Code: "ok", Message: "tab\there"},
		{Code: "ok", Message: "line\u2028separator"},
		{Code: "ok", Message: "para\u2029separator"},
		{Code: "ok", Message: "bad \xff utf-8"},
		{Code: "ok", Message: "m", UserID: "<script>"},
		{Code: "ok", Message: "m", RequestID: "a\"b"},
		{Code: "ok", Message: "m", Stock: &stock},
		{Code: "ok", Message: "m", SaleStart: &at},
		{Code: "ok", Message: "m", SaleEnd: &at},
		{Code: "ok", Message: "m", Leader: &yes},
		{Code: "ok", Message: "m", Status: "paid"},
		{Code: "ok", Message: "m", OrderRequestID: "r"},
		{Code: "ok", Message: "m", OrdersByStatus: map[string]int64{}},
	}
	for _, r := range declined {
		if got, ok := appendPurchase(nil, &r); ok {
			t.Errorf("appendPurchase(%+v) wrote %s; want it left to encoding/json", r, got)
		}
	}
}

// Whatever the strings, an answer appendPurchase writes is encoding/json's.
func FuzzPurchaseAnswerIsEncodingJSONs(f *testing.F) {
	f.Add("ok", "抢购书籍:1成功", "0193a5f0-7c1e-7d2b-9a4e-1b2c3d4e5f60", "buyer", int32(1), uint64(7), false)
	f.Add("sold_out", "库存不够", "", "", int32(0), uint64(0), true)
	f.Add("x", "<&>\"\\\u2028\xff\x00", "a\tb", "é", int32(-1), uint64(1), true)
	f.Fuzz(func(t *testing.T, code, message, requestID, userID string, goodsNo int32, orderID uint64, replayed bool) {
		writesAsEncodingJSON(t, Response{Code: code, Message: message, RequestID: requestID, UserID: userID, GoodsNo: goodsNo, OrderID: orderID, Replayed: replayed})
	})
}

// A field added to Response is either written by appendPurchase or makes
// it decline: every field, set alone beside a purchase's code and
// message, encodes as encoding/json encodes it.
func TestEveryResponseFieldIsWrittenOrDeclined(t *testing.T) {
	typ := reflect.TypeFor[Response]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		r := Response{Code: "ok", Message: "m"}
		v := reflect.ValueOf(&r).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Int32, reflect.Int64:
			v.SetInt(7)
		case reflect.Uint64:
			v.SetUint(7)
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Map:
			v.Set(reflect.MakeMap(f.Type))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		default:
			t.Fatalf("Response.%s: a %s, which this test cannot set: teach it", f.Name, v.Kind())
		}
		writesAsEncodingJSON(t, r)
	}
}

// writesAsEncodingJSON reports whether appendPurchase writes r, and fails
// the test when what it writes is not what encoding/json writes.
func writesAsEncodingJSON(t *testing.T, r Response) bool {
	t.Helper()
	got, ok := appendPurchase(nil, &r)
	if !ok {
		return false
	}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("appendPurchase(%+v) = %s; encoding/json writes %s", r, got, want)
	}
	return true
}
