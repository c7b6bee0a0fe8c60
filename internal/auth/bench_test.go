package auth_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/auth"
)

// BenchmarkBuyer is one token's verification: what auth.mode jwt adds to
// every purchase.
//
//	go test -run '^$' -bench Buyer -benchmem ./internal/auth/
func BenchmarkBuyer(b *testing.B) {
	secret := []byte(strings.Repeat("bench-secret-", 4))
	v, err := auth.NewJWT(auth.Options{HMACSecret: secret, Issuer: "https://login.example", Audience: "seckill"})
	if err != nil {
		b.Fatal(err)
	}
	tok, err := auth.MintHS256(secret, "buyer-42", "https://login.example", "seckill", time.Now(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Buyer(tok); err != nil {
			b.Fatal(err)
		}
	}
}
