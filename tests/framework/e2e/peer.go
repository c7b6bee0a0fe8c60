package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Peer is a Stack that serves the Redis + Lua peer (tests/redispeer)
// instead of the shop: Serve starts an instance of it in mode (sync, async
// or bare) on the stack's database, its Redis keys under a prefix of the
// test's own, deleted at cleanup. Shop still runs the shop's commands
// (migrate, stock set) on the same database.
type Peer struct {
	Stack
	Redis  string // host:port
	Prefix string

	shopBinary string // the stack's own, for Shop
}

// NewPeer is the peer in mode on s's database and the local Redis.
func NewPeer(t testing.TB, s Stack, mode string) Peer {
	t.Helper()
	p := Peer{Stack: s, Redis: Redis(t), Prefix: fmt.Sprintf("seckill-test:%s:%d:", mode, time.Now().UnixNano())}
	shop := s.Binary
	p.Binary = PeerBinary(t)
	p.Env = append(append([]string{}, s.Env...), "PEER_MODE="+mode, "PEER_REDIS="+p.Redis, "PEER_REDIS_PREFIX="+p.Prefix)
	p.shopBinary = shop
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: p.Redis})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := c.Keys(ctx, p.Prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = c.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Logf("cleanup of the peer's Redis keys %s*: %v", p.Prefix, err)
		}
	})
	return p
}

// Shop runs a command of the shop on the peer's database.
func (p Peer) Shop(t testing.TB, args ...string) {
	t.Helper()
	s := p.Stack
	s.Binary = p.shopBinary
	s.Shop(t, args...)
}

// RedisStock is the stock of goodsNo the peer keeps in Redis (-1: none).
func (p Peer) RedisStock(t testing.TB, goodsNo int32) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Redis})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.Get(ctx, p.Prefix+"stock:"+strconv.FormatInt(int64(goodsNo), 10)).Result()
	if err == redis.Nil {
		return -1
	}
	if err != nil {
		t.Fatalf("the peer's stock in Redis: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		t.Fatalf("the peer's stock in Redis: %q", v)
	}
	return n
}
