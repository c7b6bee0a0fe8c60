package main

import (
	"math/rand/v2"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The purchase's settings as the service takes them, and what serve says
// of them at start.

// demoPause is the demo's sleep between a purchase's read and its write: a
// random duration in [0, maxSleep), the seed's race amplifier; none for 0.
func demoPause(maxSleep time.Duration) func() time.Duration {
	if maxSleep <= 0 {
		return nil
	}
	return func() time.Duration { return rand.N(maxSleep) }
}

// lockPathAdvice says what a lock path costs a sale of many goods under a
// strategy, when it is not the path the README recommends for it: "" when
// it is. The seed's own /Locks stays the default (the seed's scenario sells
// one goods, and Java Curator instances of the seed share that lock), so
// the shop warns instead of refusing.
func lockPathAdvice(st service.Strategy, p coord.Paths) string {
	switch {
	case st.Needs.Lock && !st.BatchesAcrossGoods && !p.PerGoods():
		return "every goods shares this lock, one buyer per hold: a sale of many goods is served one buyer at a time across all of them; " +
			"set lock.path with {goodsNo} (/locks/goods/{goodsNo}) for a lock per goods"
	case st.Needs.Lock && st.BatchesAcrossGoods && p.PerGoods():
		return "a lock per goods: a sale of many goods pays a lock hold and a transaction per goods' batch, about one buyer each; " +
			"a path without {goodsNo} (the default /Locks) sells the waiting buyers of every goods under one hold"
	}
	return ""
}

// holdOrNever is room.hold as the service takes it: 0s (never) is its
// negative, its zero being the default.
func holdOrNever(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
