package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// setting is one configuration key: its type, default, meaning and where
// it goes in Config. The table below is the one place a key is declared:
// the flags, viper's defaults and the parsing come from it, and config.yaml
// and docs/configuration.md's table are generated from it (UPDATE_DOCS=1 go
// test ./cmd/shop -run TestEverySettingIsDocumented; the test fails when
// they differ). A key of a package's parses into that package's own
// options (Config embeds repo.Options, zk.Options, service.Config,
// service.OrdersConfig, limit.Options), whose default constant the row
// names, and serve hands them over as they are.
type setting struct {
	key  string
	kind kind
	def  string
	// usage is the flag's help and the README's description.
	usage string
	// parse converts and checks the key's value into c (p keeps the first
	// error).
	parse func(p *parser, key string, c *Config)
}

// kind is a setting's type: the flag's type; the parser converts strictly.
type kind int

const (
	kString kind = iota
	kInt
	kBool
	kDuration
	kList // comma separated, or a YAML list in the file
	kFloat
	kRate // a non-negative number, or auto (see autoRate)
)

// The limits' rates where buyers are strangers (auth.mode jwt); auto is
// no limit with auth.mode none, the demo's, whose load tools send as one
// client. docs/operations.md says why these: a person, or a patient client
// that comes back as Retry-After says (at least a second later), makes
// well under one purchase a second, and limits.buyerBurst (5) covers a
// double click and a retry after outcome_unknown; one client address is
// often many buyers (an office, a carrier's NAT), so its rate is a
// hundred of them, with limits.clientBurst for a sale's opening second.
const (
	autoBuyerRate  = 2
	autoClientRate = 100
	// autoRoomPlaces: the buyers behind one address (an office, a
	// carrier's NAT) who may wait in one goods' room at an instance.
	autoRoomPlaces = 64
)

// autoRateDoc is an auto rate's documentation.
func autoRateDoc(jwt float64) string {
	return strconv.FormatFloat(jwt, 'f', -1, 64) + " with auth.mode jwt, 0 with auth.mode none"
}

// shortDuration is d as a setting's default shows it: 15m, not 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var settings = []setting{
	{"server.addr", kString, "127.0.0.1:8080", "HTTP listen address (port 0 picks a free one)",
		func(p *parser, k string, c *Config) { c.Server.Addr = p.str(k) }},
	{"server.metricsAddr", kString, "", "listen address of /metrics alone (a port a NetworkPolicy can open to the scraper only); empty: /metrics on server.addr",
		func(p *parser, k string, c *Config) { c.Server.MetricsAddr = p.optional(k) }},
	{"server.shutdownTimeout", kDuration, "15s", "how long shutdown waits for in-flight purchases",
		func(p *parser, k string, c *Config) { c.Server.ShutdownTimeout = p.duration(k, false) }},
	{"server.readTimeout", kDuration, "15s", "longest time to read a request, headers and body",
		func(p *parser, k string, c *Config) { c.Server.ReadTimeout = p.duration(k, false) }},
	{"server.writeTimeout", kDuration, "0s", "longest time from a request's headers to the end of its answer; 0: lock.acquireTimeout + demo.maxSleep + " + writeMargin.String(),
		func(p *parser, k string, c *Config) { c.Server.WriteTimeout = p.duration(k, true) }},
	{"server.idleTimeout", kDuration, "60s", "a keep-alive connection idle this long is closed",
		func(p *parser, k string, c *Config) { c.Server.IdleTimeout = p.duration(k, false) }},
	{"server.maxConnections", kInt, "0", "connections served at once, idle ones included; 0: the open-file limit less mysql.maxOpenConns, three times mysql.saleConns and 64, and with a memory limit (GOMEMLIMIT, else the cgroup's) at most half of it at 20 KiB a connection",
		func(p *parser, k string, c *Config) { c.Server.MaxConnections = p.count(k) }},
	{"server.maxConnectionsPerClient", kInt, "0", "connections one client address may hold at once (a trusted proxy's: any number); beyond it a new connection is closed at once; 0: half of server.maxConnections",
		func(p *parser, k string, c *Config) { c.Server.MaxConnectionsPerClient = p.count(k) }},
	{"server.trustedProxies", kList, "", "addresses or CIDRs of the proxies whose X-Forwarded-For names the client (for limits.clientRate); empty: none, the client is the connection's peer",
		func(p *parser, k string, c *Config) { c.Server.TrustedProxies = p.proxies(k) }},
	{"mysql.dsn", kString, "seckill:seckill@tcp(127.0.0.1:3306)/seckill", "MySQL DSN (go-sql-driver form; the local stack, scripts/stack.sh, makes this user and database); tcp(a,b,c) names several servers, the nodes of a Galera cluster, this instance's own first: failover, and a goods' sales on one writer node",
		func(p *parser, k string, c *Config) { c.MySQL.DSN = p.str(k) }},
	{"mysql.maxOpenConns", kInt, strconv.Itoa(repo.DefaultMaxOpenConns), "size of the pool of reads, orders and stock settings (the seed's Druid maxActive; the sales have their own: mysql.saleConns)",
		func(p *parser, k string, c *Config) { c.MySQL.MaxOpenConns = p.positive(k) }},
	{"mysql.saleConns", kInt, strconv.Itoa(repo.DefaultSaleConns), "sale transactions one instance runs in the database at once (its sale pool, per writer node): beyond a few per core they cost the server more than they overlap",
		func(p *parser, k string, c *Config) { c.MySQL.SaleConns = p.positive(k) }},
	{"mysql.maxIdleConns", kInt, strconv.Itoa(repo.DefaultMaxIdleConns), "idle connections each pool keeps; keep it at mysql.maxOpenConns: Go closes every connection returned beyond it, and a burst then opens new ones faster than MySQL's back_log takes them (Druid's minIdle is not Go's MaxIdleConns)",
		func(p *parser, k string, c *Config) { c.MySQL.MaxIdleConns = p.positive(k) }},
	{"mysql.initialConns", kInt, "0", "connections shop serve opens in each pool before it listens, 8 at a time (the seed's Druid initialSize; at most the pool's size, and mysql.maxIdleConns stay open): a sale that opens with a crowd finds them open instead of opening them all at once past MySQL's back_log; 0: as needed",
		func(p *parser, k string, c *Config) { c.MySQL.InitialConns = p.count(k) }},
	{"mysql.idleTransactionTimeout", kDuration, "0s", "MariaDB ends a transaction of the shop's that waits this long for its next statement (a holder cut off after its claim); 0: zookeeper.sessionTimeout + demo.maxSleep",
		func(p *parser, k string, c *Config) { c.MySQL.IdleTransactionTimeout = p.duration(k, true) }},
	{"mysql.tlsCA", kString, "", "a PEM file of the CA that signed MySQL's certificate: every connection uses TLS and verifies the server with it (empty: the DSN's own tls parameter, plaintext without one)",
		func(p *parser, k string, c *Config) { c.MySQL.TLSCA = p.optional(k) }},
	{"mysql.passwordFile", kString, "", "a file holding the password of the DSN's user, which replaces the DSN's own: a secret kept out of the DSN (a Kubernetes Secret mounted as a file); empty: the DSN's",
		func(p *parser, k string, c *Config) { c.MySQL.Password = p.secretFile(k) }},
	{"zookeeper.servers", kList, "127.0.0.1:2181", "ZooKeeper ensemble, comma separated host:port",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Servers = p.list(k) }},
	{"zookeeper.sessionTimeout", kDuration, zk.DefaultSessionTimeout.String(), "ZooKeeper session timeout (the seed's Curator sessionTimeoutMs)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.SessionTimeout = p.duration(k, false) }},
	{"zookeeper.connectionTimeout", kDuration, zk.DefaultConnectionTimeout.String(), "how long start-up waits for a ZooKeeper session (the seed's Curator connectionTimeoutMs)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.ConnectionTimeout = p.duration(k, false) }},
	{"zookeeper.retry.baseSleep", kDuration, zk.DefaultRetryBaseSleep.String(), "exponential backoff retry: base sleep (the seed's ExponentialBackoffRetry(1000, 10))",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Retry.BaseSleep = p.duration(k, false) }},
	{"zookeeper.retry.maxRetries", kInt, strconv.Itoa(zk.DefaultRetryMaxRetries), "exponential backoff retry: retries (at most 29)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Retry.MaxRetries = p.positive(k) }},
	{"zookeeper.retry.maxSleep", kDuration, "0s", "exponential backoff retry: longest sleep (0: no cap)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Retry.MaxSleep = p.duration(k, true) }},
	{"zookeeper.auth", kString, "", "digest:user:password, or file:PATH of a file holding it: the shop authenticates as that identity and its nodes let only it change them (empty: no authentication, nodes open to anyone)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Digest = p.zkAuth(k) }},
	{"zookeeper.namespace", kString, "", "a path every ZooKeeper path of the shop's goes under (lock.path, leader.path, allot.path), as Curator's namespace: deployments sharing an ensemble kept apart (empty: none)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Namespace = p.namespace(k) }},
	{"lock.enabled", kBool, "true", "guard purchases with the ZooKeeper lock; false reproduces overselling",
		func(p *parser, k string, c *Config) { c.Lock.Enabled = p.boolean(k) }},
	{"lock.path", kString, "/Locks", "lock path; {goodsNo} in it makes one lock per goods (/locks/goods/{goodsNo}), {stripe} one per stripe of goods (/locks/stripe/{stripe}, lock.stripes of them)",
		func(p *parser, k string, c *Config) { c.Lock.Path = p.lockPath(k) }},
	{"lock.stripes", kInt, "16", "how many locks a lock.path with {stripe} spreads the goods over (goodsNo mod lock.stripes)",
		func(p *parser, k string, c *Config) { c.Lock.Stripes = p.positive(k) }},
	{"lock.order", kString, "arrival", "the order the lock serves its waiters in: arrival (when the shop read each buyer's request, within and across instances) or sequence (when each waiter's node reached ZooKeeper: Curator's InterProcessMutex, which Java services can share the path with); every instance on a lock path must have the same",
		func(p *parser, k string, c *Config) { c.Lock.Order = p.oneOf(k, "arrival", "sequence") }},
	{"lock.acquireTimeout", kDuration, service.DefaultAcquireTimeout.String(), "how long a purchase waits for the lock (allot: for stock another instance holds) before answering 503",
		func(p *parser, k string, c *Config) { c.Purchase.AcquireTimeout = p.duration(k, false) }},
	{"purchase.saleTimeout", kDuration, "0s", "the longest a sale under the lock may take in MySQL before it is given up (rolled back, 503 unavailable) and the lock let go: a holder cut off from MySQL; 0: zookeeper.sessionTimeout + demo.maxSleep",
		func(p *parser, k string, c *Config) { c.Purchase.SaleTimeout = p.duration(k, true) }},
	{"purchase.strategy", kString, "seed", strategyDoc(),
		func(p *parser, k string, c *Config) { c.Purchase.Strategy = p.oneOf(k, strategyNames()...) }},
	{"purchase.maxWaiting", kInt, strconv.Itoa(service.DefaultMaxWaiting), "the most purchases in progress per instance (buyers waiting for the lock), whatever purchase.queueTarget allows; beyond it 503 busy",
		func(p *parser, k string, c *Config) { c.Purchase.MaxWaiting = p.positive(k) }},
	{"purchase.queueTarget", kDuration, service.DefaultQueueTarget.String(), "how long a buyer let in waits at most: the purchases in progress per instance follow its measured purchases/s times this, a buyer beyond them is answered 503 busy at once (0: purchase.maxWaiting alone)",
		func(p *parser, k string, c *Config) { c.Purchase.QueueTarget = p.durationOrOff(k) }},
	{"purchase.batchMax", kInt, strconv.Itoa(service.DefaultBatchMax), "batch strategy: the most buyers one batch sells to",
		func(p *parser, k string, c *Config) { c.Purchase.BatchMax = p.positive(k) }},
	{"purchase.onePerBuyer", kBool, "true", "a buyer who gives an id (X-User-ID) holds at most one order of a goods that is not expired",
		func(p *parser, k string, c *Config) { c.Purchase.OnePerBuyer = p.boolean(k) }},
	{"allot.path", kString, "/seckill/{database}/leases", "allot strategy: ZooKeeper path of the leases' ephemeral nodes (a lease whose node is gone is closed and its stock put back); {database} is mysql.dsn's database",
		func(p *parser, k string, c *Config) { c.Allot.Path = p.lockPath(k) }},
	{"allot.keep", kDuration, service.DefaultAllotKeep.String(), "allot strategy: how long an instance keeps the stock of a goods its buyers stopped asking for before it goes back to the goods' row; stock another instance asks for goes back after 100 ms",
		func(p *parser, k string, c *Config) { c.Allot.Keep = p.duration(k, false) }},
	{"orders.payTimeout", kDuration, shortDuration(service.DefaultPayTimeout), "how long an order may stay unpaid before it expires and its piece returns to the stock (0: never)",
		func(p *parser, k string, c *Config) { c.Orders.PayTimeout = p.durationOrOff(k) }},
	{"orders.sweepInterval", kDuration, service.DefaultSweepInterval.String(), "how often the elected instance expires unpaid orders",
		func(p *parser, k string, c *Config) { c.Orders.SweepInterval = p.duration(k, false) }},
	{"leader.enabled", kBool, "true", "elect one instance on ZooKeeper to sweep expired orders; false: every instance sweeps (safe, each order expires once)",
		func(p *parser, k string, c *Config) { c.Leader.Enabled = p.boolean(k) }},
	{"leader.path", kString, "/seckill/{database}/leader", "ZooKeeper path of the sweeper's election (Curator LeaderSelector); {database} is mysql.dsn's database, so that deployments on other databases elect their own sweepers",
		func(p *parser, k string, c *Config) { c.Leader.Path = p.lockPath(k) }},
	{"leader.id", kString, "", "this instance's participant id in the election (default: hostname:port)",
		func(p *parser, k string, c *Config) { c.Leader.ID = strings.TrimSpace(p.v.GetString(k)) }},
	{"dashboard.peers", kList, "", "base URLs of the instances /dashboard shows, comma separated; self is this one (empty: this one only); the pages of these origins alone may read this instance's /dashboard/data, so give every instance the same list",
		func(p *parser, k string, c *Config) { c.Dashboard.Peers = p.peers(k) }},
	{"dashboard.goods", kInt, "1", "the goods /dashboard charts",
		func(p *parser, k string, c *Config) { c.Dashboard.Goods = int32(p.positive(k)) }},
	{"auth.mode", kString, "none", "who a buyer is: none (the anonymous demo: X-User-ID names a buyer, orders are open to anyone) or jwt (a bearer token per request; its sub is the buyer, who alone reads and pays its orders)",
		func(p *parser, k string, c *Config) { c.Auth.Mode = p.oneOf(k, "none", "jwt") }},
	{"auth.hmacSecretFile", kString, "", "auth.mode jwt: a file holding the HS256 secret (at least 32 bytes)",
		func(p *parser, k string, c *Config) {
			if c.Auth.HMACSecretFile = p.optional(k); c.Auth.HMACSecretFile != "" {
				p.privateFile(k, c.Auth.HMACSecretFile)
			}
		}},
	{"auth.publicKeyFile", kString, "", "auth.mode jwt: a PEM public key instead (RSA: RS256, ECDSA P-256: ES256, Ed25519: EdDSA)",
		func(p *parser, k string, c *Config) {
			if c.Auth.PublicKeyFile = p.optional(k); c.Auth.PublicKeyFile != "" {
				p.keptFile(k, c.Auth.PublicKeyFile)
			}
		}},
	{"auth.issuer", kString, "", "auth.mode jwt: the iss every token must carry (empty: not checked)",
		func(p *parser, k string, c *Config) { c.Auth.Issuer = p.optional(k) }},
	{"auth.audience", kString, "", "auth.mode jwt: an aud every token must carry (empty: not checked)",
		func(p *parser, k string, c *Config) { c.Auth.Audience = p.optional(k) }},
	{"auth.maxTokenLifetime", kDuration, auth.DefaultMaxLifetime.String(), "auth.mode jwt: the longest a token may be valid, from its iat (or from now without one) to its exp; a longer one is refused",
		func(p *parser, k string, c *Config) { c.Auth.MaxTokenLifetime = p.duration(k, false) }},
	{"room.enabled", kBool, "true", "a waiting room: past capacity a buyer (X-User-ID, the token's sub, an anonymous buyer's own X-Request-ID, else an id its place carries) gets a place in arrival order across the instances, one per buyer and goods at an instance, kept while it comes back (a cookie or X-Place), and is let in in that order (503 queued); false: 503 busy",
		func(p *parser, k string, c *Config) { c.Room.Enabled = p.boolean(k) }},
	{"room.keep", kDuration, service.DefaultRoomKeep.String(), "how long a place is kept when its buyer does not come back after the time it was told",
		func(p *parser, k string, c *Config) { c.Room.Keep = p.duration(k, false) }},
	{"room.hold", kDuration, service.DefaultRoomHold.String(), "how long a buyer past capacity whose turn is due within it waits at the door in its own request (within its X-Request-Timeout-Ms), instead of being sent away to come back after Retry-After; 0s: never",
		func(p *parser, k string, c *Config) { c.Room.Hold = holdOrNever(p.duration(k, true)) }},
	{"room.placesPerClient", kRate, "auto", "places of one goods that one client address (the client a trusted proxy names, else the peer) may hold at an instance; past it a new buyer of that address hears 503 busy (0: no limit); auto: " + autoRateDoc(autoRoomPlaces) + " (a load test's buyers share one address, and anyone may be any X-User-ID)",
		func(p *parser, k string, c *Config) {
			c.Room.PlacesPerClient = int(p.autoRate(k, c.Auth.Mode, autoRoomPlaces))
		}},
	{"room.shuffle", kBool, "true", "the places given before a goods' sale starts (the pre-queue) are let in in random order at the start, as Cloudflare's and Queue-it's rooms do, rather than by arrival",
		func(p *parser, k string, c *Config) { c.Room.Shuffle = p.boolean(k) }},
	{"limits.buyerRate", kRate, "auto", "purchases per second one buyer may make, on average (0: no limit); beyond it 429 too_many_requests; auto: " + autoRateDoc(autoBuyerRate),
		func(p *parser, k string, c *Config) { c.Limits.Buyer.Rate = p.autoRate(k, c.Auth.Mode, autoBuyerRate) }},
	{"limits.buyerBurst", kInt, "5", "purchases one buyer may make at once before limits.buyerRate paces it",
		func(p *parser, k string, c *Config) { c.Limits.Buyer.Burst = p.positive(k) }},
	{"limits.clientRate", kRate, "auto", "purchases (and, with auth.mode jwt, order reads and payments) per second one client address may make, on average (0: no limit); auto: " + autoRateDoc(autoClientRate),
		func(p *parser, k string, c *Config) {
			c.Limits.Client.Rate = p.autoRate(k, c.Auth.Mode, autoClientRate)
		}},
	{"limits.clientBurst", kInt, "50", "requests limits.clientRate counts that one client address may make at once before it paces them",
		func(p *parser, k string, c *Config) { c.Limits.Client.Burst = p.positive(k) }},
	{"demo.maxSleep", kDuration, "0s", "random sleep in [0, maxSleep) inside the purchase: the seed's race amplifier (the seed sleeps up to 1s)",
		func(p *parser, k string, c *Config) { c.Demo.MaxSleep = p.duration(k, true) }},
	{"clock.source", kString, "mysql", "the clock sale windows, order deadlines and the sweeper go by: mysql (this machine's, corrected by its offset to MySQL's, measured every 10s: the instances agree) or local (this machine's alone: instances whose clocks are off disagree)",
		func(p *parser, k string, c *Config) { c.Clock.Source = p.oneOf(k, "mysql", "local") }},
	{"clock.offset", kDuration, "0s", "added to this machine's clock before anything reads it: for a test of a machine whose clock is off (may be negative); leave it 0",
		func(p *parser, k string, c *Config) { c.Clock.Offset = p.signedDuration(k) }},
	{"log.level", kString, "info", "log level: debug, info, warn, error",
		func(p *parser, k string, c *Config) { c.Log.Level = p.oneOf(k, "debug", "info", "warn", "error") }},
}

// strategyDoc is purchase.strategy's documentation: the registry's
// strategies.
func strategyDoc() string {
	var b strings.Builder
	b.WriteString("purchase strategy:")
	for i, st := range service.Strategies() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(" " + st.Name + " (" + st.Summary + ")")
	}
	return b.String()
}

// strategyNames are the names purchase.strategy takes.
func strategyNames() []string {
	var names []string
	for _, st := range service.Strategies() {
		names = append(names, st.Name)
	}
	return names
}
