package handler_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/internal/handler"
	"github.com/seckill-zk/seckill-zk/internal/limit"
)

// BenchmarkPurchaseWho is one purchase through the handler (the shop a
// fake) as bench-shop's (f) sends it: a new buyer each time, named by
// X-User-ID, by a token, or by a token with both limits on.
//
//	go test -run '^$' -bench PurchaseWho -benchmem ./internal/handler/
func BenchmarkPurchaseWho(b *testing.B) {
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret})
	if err != nil {
		b.Fatal(err)
	}
	const buyers = 20000
	tokens := make([]string, buyers)
	for i := range tokens {
		if tokens[i], err = auth.MintHS256(secret, fmt.Sprint("buyer-", i), "", "", time.Now(), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"none", "jwt", "jwt and the limits"} {
		b.Run(mode, func(b *testing.B) {
			s := handler.Services{Shop: &buyerShop{}}
			if mode != "none" {
				s.Auth = v
			}
			if mode == "jwt and the limits" {
				s.BuyerLimit = limit.New(limit.Options{Rate: 100, Burst: 5})
				s.ClientLimit = limit.New(limit.Options{Rate: 1e6, Burst: 1e6})
			}
			h := handler.New(s, slog.New(slog.DiscardHandler))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/goods-stock/1", nil)
				if mode == "none" {
					req.Header.Set("X-User-ID", fmt.Sprint("buyer-", i%buyers))
				} else {
					req.Header.Set("Authorization", "Bearer "+tokens[i%buyers])
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				i++
			}
		})
	}
}
