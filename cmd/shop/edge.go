package main

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/internal/handler"
	"github.com/seckill-zk/seckill-zk/internal/limit"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The HTTP edge from the configuration: its limits (connections, timeouts,
// the proxies trusted to name the client) and who may do what (the
// buyers' tokens, the purchase limits).

// writeMargin is what server.writeTimeout 0 adds to the wait for the lock
// and the demo's sleep: finding out a cut-off commit's outcome, and room
// for the transaction (the setting's usage names it).
const writeMargin = service.DefaultOutcomeTimeout + 30*time.Second

// limits are the HTTP server's bounds, derived where configured as 0.
type limits struct {
	write       time.Duration
	connections int
	perClient   int // connections one client address may hold
}

// httpLimits sizes the write timeout to the longest purchase (the wait for
// the lock, the demo's sleep, finding out a cut-off commit's outcome, and
// room for the transaction) and caps the connections below the open-file
// limit, leaving room for the MySQL pool, ZooKeeper and the process's own
// files: past the cap new connections wait in the listen backlog instead of
// failing accept with "too many open files" and starving every buyer. With
// a memory limit (memLimit bytes, 0: none) the cap also keeps the
// connections within half of it (connectionsFor).
func httpLimits(cfg Config, memLimit int64) limits {
	l := limits{write: cfg.Server.WriteTimeout, connections: cfg.Server.MaxConnections}
	if l.write == 0 {
		l.write = cfg.Purchase.AcquireTimeout + cfg.Demo.MaxSleep + writeMargin
	}
	if l.connections == 0 {
		var rl syscall.Rlimit
		l.connections = 4096
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 1<<30 {
			// The store's pools: mysql.maxOpenConns, and mysql.saleConns
			// per writer node (see repo.Open).
			l.connections = max(64, int(rl.Cur)-cfg.MySQL.MaxOpenConns-3*cfg.MySQL.SaleConns-64)
		}
		if byMemory := connectionsFor(memLimit); byMemory > 0 {
			l.connections = min(l.connections, byMemory)
		}
	}
	l.perClient = cfg.Server.MaxConnectionsPerClient
	if l.perClient == 0 {
		l.perClient = max(1, l.connections/2)
	}
	return l
}

// trusted reports whether an address is one of server.trustedProxies (an
// address or a CIDR each; parseConfig has checked them).
func trusted(proxies []string) func(netip.Addr) bool {
	var prefixes []netip.Prefix
	for _, p := range proxies {
		if pre, err := netip.ParsePrefix(p); err == nil {
			prefixes = append(prefixes, pre.Masked())
		} else if a, err := netip.ParseAddr(p); err == nil {
			prefixes = append(prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return func(a netip.Addr) bool {
		for _, pre := range prefixes {
			if pre.Contains(a) {
				return true
			}
		}
		return false
	}
}

// who sets up who may do what: the verifier of buyers' tokens (auth.mode
// jwt) and the purchase limits per buyer and per client address.
func who(cfg Config, s *handler.Services) error {
	if cfg.Auth.Mode == "jwt" {
		opts := auth.Options{Issuer: cfg.Auth.Issuer, Audience: cfg.Auth.Audience, ValidBuyer: handler.ValidID, MaxLifetime: cfg.Auth.MaxTokenLifetime}
		var err error
		if cfg.Auth.HMACSecretFile != "" {
			if opts.HMACSecret, err = auth.ReadSecret(cfg.Auth.HMACSecretFile); err == nil && len(opts.HMACSecret) >= auth.MinSecretLen {
				if werr := auth.Weak(opts.HMACSecret); werr != nil {
					return fmt.Errorf("auth.hmacSecretFile: the secret %w", werr)
				}
			}
		} else {
			opts.PublicKey, err = auth.ReadPublicKey(cfg.Auth.PublicKeyFile)
		}
		if err != nil {
			return err
		}
		if s.Auth, err = auth.NewJWT(opts); err != nil {
			return err
		}
	}
	if cfg.Limits.Buyer.Rate > 0 {
		s.BuyerLimit = limit.New(cfg.Limits.Buyer)
	}
	if cfg.Limits.Client.Rate > 0 {
		s.ClientLimit = limit.New(cfg.Limits.Client)
	}
	return nil
}

// loopback reports whether addr is a loopback address (only this machine
// reaches it).
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
