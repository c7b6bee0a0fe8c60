package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/api/client"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The Go client generated from the OpenAPI description (internal/api/client)
// buys a piece, reads its order and pays it, each answer in its route's
// type; a refusal arrives in the refusal's.
func TestTheGeneratedClientBuysAPiece(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithPayTimeout(time.Minute))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "1", "--clear-orders")
	in := s.Serve(t)
	c, err := client.NewClientWithResponses(in.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	buyer, rid := client.UserId("gen-buyer"), client.RequestId("gen-1")
	bought, err := c.PurchaseWithResponse(ctx, "1", &client.PurchaseParams{XUserID: &buyer, XRequestID: &rid})
	if err != nil || bought.JSON200 == nil || bought.JSON200.OrderId == nil || bought.JSON200.Code != client.CodeOk {
		t.Fatalf("the purchase: %v, %d %s", err, bought.StatusCode(), bought.Body)
	}
	id := client.OrderId(strconv.Itoa(*bought.JSON200.OrderId))
	order, err := c.OrderWithResponse(ctx, id)
	if err != nil || order.JSON200 == nil || order.JSON200.Status != client.Unpaid || order.JSON200.GoodsNo != 1 {
		t.Fatalf("the order: %v, %d %s", err, order.StatusCode(), order.Body)
	}
	paid, err := c.PayWithResponse(ctx, id)
	if err != nil || paid.JSON200 == nil || paid.JSON200.Status != client.Paid || paid.JSON200.PaidAt == nil {
		t.Fatalf("the payment: %v, %d %s", err, paid.StatusCode(), paid.Body)
	}
	other := client.UserId("gen-other")
	refused, err := c.PurchaseWithResponse(ctx, "1", &client.PurchaseParams{XUserID: &other})
	if err != nil || refused.JSON409 == nil || refused.JSON409.Code != client.CodeSoldOut {
		t.Fatalf("a purchase of the sold-out goods: %v, %d %s", err, refused.StatusCode(), refused.Body)
	}
	health, err := c.HealthzWithResponse(ctx)
	if err != nil || health.JSON200 == nil || health.JSON200.Version == "" {
		t.Fatalf("/healthz: %v, %d %s", err, health.StatusCode(), health.Body)
	}
}
