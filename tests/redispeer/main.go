// Command redispeer is make bench-shop's peer, not a strategy of the shop:
// the design most flash-sale systems use. The stock lives in Redis, one Lua
// script checks and takes a piece, and the order is written afterwards:
//
//   - sync: the buyer waits for the order's transaction (the order row and
//     the stock's decrement in MySQL) and hears 200 after its commit;
//   - async: the piece is queued for a background writer, which writes the
//     queue in batches (one transaction: a multi-row INSERT and one UPDATE of
//     each goods' stock); the buyer hears 200 at once, before anything is
//     durable, and an instance that dies loses what it queued;
//   - bare: the same 200 answer, nothing done: the floor of any design.
//
// It answers GET and POST /goods-stock/{goodsNo} with the shop's JSON and
// writes the shop's order_info rows, so the benchmark checks it as it checks
// the shop. It runs as the shop does on the e2e harness: `redispeer serve
// --server.addr=ADDR`, SHOP_MYSQL_DSN, PEER_MODE (sync, async, bare),
// PEER_REDIS (host:port) and PEER_REDIS_PREFIX (the keys' prefix, one per
// sale). At the start it copies every goods' stock from MySQL into Redis;
// SIGINT drains the async writer, then exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/handler"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "redispeer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "serve" {
		return errors.New("usage: redispeer serve [--server.addr=ADDR]")
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("server.addr", "127.0.0.1:8090", "HTTP listen address")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	mode := os.Getenv("PEER_MODE")
	p, err := newPeer(ctx, mode, os.Getenv("SHOP_MYSQL_DSN"), os.Getenv("PEER_REDIS"), os.Getenv("PEER_REDIS_PREFIX"), log)
	if err != nil {
		return err
	}
	defer p.close()

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/goods-stock/:goodsNo", p.purchase)
	r.POST("/goods-stock/:goodsNo", p.purchase)
	r.GET("/readyz", func(c *gin.Context) { c.JSON(http.StatusOK, handler.Response{Code: api.Ready, Message: "ready"}) })
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 15 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "mode", mode)

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := p.drain(sctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// peer is one instance of the Redis design.
type peer struct {
	mode   string
	redis  *redis.Client
	prefix string
	store  *store
	writer *writer // async only
	log    *slog.Logger
}

func newPeer(ctx context.Context, mode, dsn, redisAddr, prefix string, log *slog.Logger) (*peer, error) {
	switch mode {
	case "sync", "async", "bare":
	default:
		return nil, fmt.Errorf("PEER_MODE %q: want sync, async or bare", mode)
	}
	p := &peer{mode: mode, prefix: prefix, log: log}
	if mode == "bare" {
		return p, nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("SHOP_MYSQL_DSN: %w", err)
	}
	// As the shop's: values interpolated (no prepared statement's round
	// trips), several statements per query.
	cfg.InterpolateParams, cfg.MultiStatements = true, true
	if p.store, err = openStore(cfg); err != nil {
		return nil, err
	}
	p.redis = redis.NewClient(&redis.Options{Addr: redisAddr})
	if err := p.loadStock(ctx); err != nil {
		p.close()
		return nil, err
	}
	if mode == "async" {
		p.writer = newWriter(p.store, log)
	}
	return p, nil
}

// loadStock copies every goods' stock into Redis.
func (p *peer) loadStock(ctx context.Context) error {
	stocks, err := p.store.stocks(ctx)
	if err != nil {
		return err
	}
	pipe := p.redis.Pipeline()
	for goodsNo, stock := range stocks {
		pipe.Set(ctx, p.key(goodsNo), stock, 0)
	}
	_, err = pipe.Exec(ctx)
	return err
}

func (p *peer) key(goodsNo int32) string {
	return p.prefix + "stock:" + strconv.FormatInt(int64(goodsNo), 10)
}

// take is the Lua script: -1 no such goods, 0 sold out, else the piece is
// taken (the stock left + 1).
var take = redis.NewScript(`
local s = redis.call('GET', KEYS[1])
if not s then return -1 end
s = tonumber(s)
if s <= 0 then return 0 end
redis.call('DECR', KEYS[1])
return s`)

func (p *peer) purchase(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	goodsNo, err := handler.ParseGoodsNo(c.Param("goodsNo"))
	if err != nil {
		p.fail(c, 0, err)
		return
	}
	rid := c.GetHeader("X-Request-ID")
	if rid == "" {
		rid = handler.NewRequestID() // the shop's ids: the same index work as its orders
	}
	ok := handler.Response{Code: api.OK, Message: fmt.Sprintf("抢购书籍:%d成功", goodsNo), GoodsNo: goodsNo, RequestID: rid}
	if p.mode == "bare" {
		c.JSON(http.StatusOK, ok)
		return
	}
	ctx := c.Request.Context()
	n, err := take.Run(ctx, p.redis, []string{p.key(goodsNo)}).Int()
	switch {
	case err != nil:
		p.fail(c, goodsNo, fmt.Errorf("%w: redis: %w", service.ErrUnavailable, err))
		return
	case n < 0:
		p.fail(c, goodsNo, service.ErrNotFound)
		return
	case n == 0:
		p.fail(c, goodsNo, service.ErrSoldOut)
		return
	}
	o := order{goodsNo: goodsNo, requestID: rid, createdAt: time.Now().UTC()}
	if p.mode == "async" {
		p.writer.enqueue(o)
		c.JSON(http.StatusOK, ok)
		return
	}
	id, err := p.store.sell(ctx, o)
	if err != nil {
		// The piece goes back: the order was not written.
		if rerr := p.redis.Incr(context.WithoutCancel(ctx), p.key(goodsNo)).Err(); rerr != nil {
			p.log.Error("a piece taken in Redis was not given back", "goods", goodsNo, "err", rerr)
		}
		p.fail(c, goodsNo, fmt.Errorf("%w: %w", service.ErrUnavailable, err))
		return
	}
	ok.OrderID = id
	c.JSON(http.StatusOK, ok)
}

// fail answers err with the shop's own row of its error table.
func (p *peer) fail(c *gin.Context, goodsNo int32, err error) {
	status, code, msg := handler.StatusOf(err)
	if status >= http.StatusInternalServerError {
		p.log.Error("purchase failed", "goods", goodsNo, "err", err)
	}
	c.JSON(status, handler.Response{Code: code, Message: msg, GoodsNo: goodsNo})
}

// drain waits for the async writer to write what it queued.
func (p *peer) drain(ctx context.Context) error {
	if p.writer == nil {
		return nil
	}
	return p.writer.close(ctx)
}

func (p *peer) close() {
	if p.redis != nil {
		p.redis.Close()
	}
	if p.store != nil {
		p.store.close()
	}
}
