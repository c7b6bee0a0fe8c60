package main

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Config is the shop's configuration: config.yaml, overridden by SHOP_*
// environment variables, overridden by flags.
type Config struct {
	Server struct {
		Addr            string
		ShutdownTimeout time.Duration
		ReadTimeout     time.Duration
		WriteTimeout    time.Duration // 0: derived from the purchase's longest path
		IdleTimeout     time.Duration
		MaxConnections  int // 0: derived from the open-file limit
		TrustedProxies  []string
	}
	MySQL struct {
		DSN          string
		MaxOpenConns int
		SaleConns    int
		MaxIdleConns int
		// IdleTransactionTimeout: 0 derives it (IdleTransaction).
		IdleTransactionTimeout time.Duration
		TLSCA                  string // "" : the DSN's tls parameter
	}
	ZooKeeper struct {
		Servers           []string
		SessionTimeout    time.Duration
		ConnectionTimeout time.Duration
		Retry             zk.ExponentialBackoffRetry
		Auth              string // user:password of the digest identity; "" : none
	}
	Lock struct {
		Enabled        bool
		Path           string // may hold {goodsNo} or {stripe}
		Stripes        int
		AcquireTimeout time.Duration
	}
	Purchase struct {
		Strategy    string // seed, batch or atomic
		MaxWaiting  int
		BatchMax    int
		OnePerBuyer bool
	}
	Orders struct {
		PayTimeout    time.Duration // 0: orders never expire
		SweepInterval time.Duration
	}
	Leader struct {
		Enabled bool
		Path    string
		ID      string // "" : host:port
	}
	Dashboard struct {
		Peers []string // base URLs of the instances the page shows; empty: this one
		Goods int32
	}
	Auth struct {
		Mode           string // none or jwt
		HMACSecretFile string
		PublicKeyFile  string
		Issuer         string
		Audience       string
	}
	Limits struct {
		BuyerRate   float64 // 0: no limit
		BuyerBurst  int
		ClientRate  float64 // 0: no limit
		ClientBurst int
	}
	Demo struct {
		MaxSleep time.Duration
	}
	Log struct {
		Level string
	}
}

// setting is one configuration key: its type, default, meaning and where
// it goes in Config. The table below is the one place a key is declared:
// the flags, viper's defaults and the parsing come from it, and tests check
// config.yaml and the README's table against it.
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
)

var settings = []setting{
	{"server.addr", kString, "127.0.0.1:8080", "HTTP listen address (port 0 picks a free one)",
		func(p *parser, k string, c *Config) { c.Server.Addr = p.str(k) }},
	{"server.shutdownTimeout", kDuration, "15s", "how long shutdown waits for in-flight purchases",
		func(p *parser, k string, c *Config) { c.Server.ShutdownTimeout = p.duration(k, false) }},
	{"server.readTimeout", kDuration, "15s", "longest time to read a request, headers and body",
		func(p *parser, k string, c *Config) { c.Server.ReadTimeout = p.duration(k, false) }},
	{"server.writeTimeout", kDuration, "0s", "longest time from a request's headers to the end of its answer; 0: lock.acquireTimeout + demo.maxSleep + 40s",
		func(p *parser, k string, c *Config) { c.Server.WriteTimeout = p.duration(k, true) }},
	{"server.idleTimeout", kDuration, "60s", "a keep-alive connection idle this long is closed",
		func(p *parser, k string, c *Config) { c.Server.IdleTimeout = p.duration(k, false) }},
	{"server.maxConnections", kInt, "0", "connections served at once, idle ones included; 0: the open-file limit less mysql.maxOpenConns, three times mysql.saleConns and 64",
		func(p *parser, k string, c *Config) { c.Server.MaxConnections = p.count(k) }},
	{"server.trustedProxies", kList, "", "addresses or CIDRs of the proxies whose X-Forwarded-For names the client (for limits.clientRate); empty: none, the client is the connection's peer",
		func(p *parser, k string, c *Config) { c.Server.TrustedProxies = p.proxies(k) }},
	{"mysql.dsn", kString, "seckill:seckill@tcp(127.0.0.1:3306)/seckill", "MySQL DSN (go-sql-driver form); tcp(a,b,c) names several servers, the nodes of a Galera cluster: failover, and a goods' sales on one writer node",
		func(p *parser, k string, c *Config) { c.MySQL.DSN = p.str(k) }},
	{"mysql.maxOpenConns", kInt, "100", "size of the pool of reads, orders and stock settings (the seed's Druid maxActive; the sales have their own: mysql.saleConns)",
		func(p *parser, k string, c *Config) { c.MySQL.MaxOpenConns = p.positive(k) }},
	{"mysql.saleConns", kInt, strconv.Itoa(repo.DefaultSaleConns), "sale transactions one instance runs in the database at once (its sale pool, per writer node): beyond a few per core they cost the server more than they overlap",
		func(p *parser, k string, c *Config) { c.MySQL.SaleConns = p.positive(k) }},
	{"mysql.maxIdleConns", kInt, "100", "idle connections each pool keeps; keep it at mysql.maxOpenConns: Go closes every connection returned beyond it, and a burst then opens new ones faster than MySQL's back_log takes them (Druid's minIdle is not Go's MaxIdleConns)",
		func(p *parser, k string, c *Config) { c.MySQL.MaxIdleConns = p.positive(k) }},
	{"mysql.idleTransactionTimeout", kDuration, "0s", "MariaDB ends a transaction of the shop's that waits this long for its next statement (a holder cut off after its claim); 0: zookeeper.sessionTimeout + demo.maxSleep",
		func(p *parser, k string, c *Config) { c.MySQL.IdleTransactionTimeout = p.duration(k, true) }},
	{"mysql.tlsCA", kString, "", "a PEM file of the CA that signed MySQL's certificate: every connection uses TLS and verifies the server with it (empty: the DSN's own tls parameter, plaintext without one)",
		func(p *parser, k string, c *Config) { c.MySQL.TLSCA = p.optional(k) }},
	{"zookeeper.servers", kList, "127.0.0.1:2181", "ZooKeeper ensemble, comma separated host:port",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Servers = p.list(k) }},
	{"zookeeper.sessionTimeout", kDuration, zk.DefaultSessionTimeout.String(), "ZooKeeper session timeout",
		func(p *parser, k string, c *Config) { c.ZooKeeper.SessionTimeout = p.duration(k, false) }},
	{"zookeeper.connectionTimeout", kDuration, zk.DefaultConnectionTimeout.String(), "how long start-up waits for a ZooKeeper session",
		func(p *parser, k string, c *Config) { c.ZooKeeper.ConnectionTimeout = p.duration(k, false) }},
	{"zookeeper.retry.baseSleep", kDuration, zk.DefaultRetryBaseSleep.String(), "exponential backoff retry: base sleep",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Retry.BaseSleep = p.duration(k, false) }},
	{"zookeeper.retry.maxRetries", kInt, strconv.Itoa(zk.DefaultRetryMaxRetries), "exponential backoff retry: retries (at most 29)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Retry.MaxRetries = p.positive(k) }},
	{"zookeeper.retry.maxSleep", kDuration, "0s", "exponential backoff retry: longest sleep (0: no cap)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Retry.MaxSleep = p.duration(k, true) }},
	{"zookeeper.auth", kString, "", "digest:user:password, or file:PATH of a file holding it: the shop authenticates as that identity and its nodes let only it change them (empty: no authentication, nodes open to anyone)",
		func(p *parser, k string, c *Config) { c.ZooKeeper.Auth = p.zkAuth(k) }},
	{"lock.enabled", kBool, "true", "guard purchases with the ZooKeeper lock; false reproduces overselling",
		func(p *parser, k string, c *Config) { c.Lock.Enabled = p.boolean(k) }},
	{"lock.path", kString, "/Locks", "lock path; {goodsNo} in it makes one lock per goods (/locks/goods/{goodsNo}), {stripe} one per stripe of goods (/locks/stripe/{stripe}, lock.stripes of them)",
		func(p *parser, k string, c *Config) { c.Lock.Path = p.lockPath(k) }},
	{"lock.stripes", kInt, "16", "how many locks a lock.path with {stripe} spreads the goods over (goodsNo mod lock.stripes)",
		func(p *parser, k string, c *Config) { c.Lock.Stripes = p.positive(k) }},
	{"lock.acquireTimeout", kDuration, service.DefaultAcquireTimeout.String(), "how long a purchase waits for the lock before answering 503",
		func(p *parser, k string, c *Config) { c.Lock.AcquireTimeout = p.duration(k, false) }},
	{"purchase.strategy", kString, "seed", "purchase strategy: seed (one buyer per lock hold), batch (one lock hold and one transaction per batch of buyers), atomic (no lock: a conditional UPDATE per buyer)",
		func(p *parser, k string, c *Config) { c.Purchase.Strategy = p.oneOf(k, "seed", "batch", "atomic") }},
	{"purchase.maxWaiting", kInt, "1000", "purchases in progress per instance (buyers waiting for the lock); beyond it 503 busy",
		func(p *parser, k string, c *Config) { c.Purchase.MaxWaiting = p.positive(k) }},
	{"purchase.batchMax", kInt, strconv.Itoa(service.DefaultBatchMax), "batch strategy: the most buyers one batch sells to",
		func(p *parser, k string, c *Config) { c.Purchase.BatchMax = p.positive(k) }},
	{"purchase.onePerBuyer", kBool, "true", "a buyer who gives an id (X-User-ID) holds at most one order of a goods that is not expired",
		func(p *parser, k string, c *Config) { c.Purchase.OnePerBuyer = p.boolean(k) }},
	{"orders.payTimeout", kDuration, "15m", "how long an order may stay unpaid before it expires and its piece returns to the stock (0: never)",
		func(p *parser, k string, c *Config) { c.Orders.PayTimeout = p.duration(k, true) }},
	{"orders.sweepInterval", kDuration, "1s", "how often the elected instance expires unpaid orders",
		func(p *parser, k string, c *Config) { c.Orders.SweepInterval = p.duration(k, false) }},
	{"leader.enabled", kBool, "true", "elect one instance on ZooKeeper to sweep expired orders; false: every instance sweeps (safe, each order expires once)",
		func(p *parser, k string, c *Config) { c.Leader.Enabled = p.boolean(k) }},
	{"leader.path", kString, "/seckill/leader", "ZooKeeper path of the sweeper's election (Curator LeaderSelector)",
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
		func(p *parser, k string, c *Config) { c.Auth.HMACSecretFile = p.optional(k) }},
	{"auth.publicKeyFile", kString, "", "auth.mode jwt: a PEM public key instead (RSA: RS256, ECDSA P-256: ES256, Ed25519: EdDSA)",
		func(p *parser, k string, c *Config) { c.Auth.PublicKeyFile = p.optional(k) }},
	{"auth.issuer", kString, "", "auth.mode jwt: the iss every token must carry (empty: not checked)",
		func(p *parser, k string, c *Config) { c.Auth.Issuer = p.optional(k) }},
	{"auth.audience", kString, "", "auth.mode jwt: an aud every token must carry (empty: not checked)",
		func(p *parser, k string, c *Config) { c.Auth.Audience = p.optional(k) }},
	{"limits.buyerRate", kFloat, "0", "purchases per second one buyer may make, on average (0: no limit); beyond it 429 too_many_requests",
		func(p *parser, k string, c *Config) { c.Limits.BuyerRate = p.rate(k) }},
	{"limits.buyerBurst", kInt, "5", "purchases one buyer may make at once before limits.buyerRate paces it",
		func(p *parser, k string, c *Config) { c.Limits.BuyerBurst = p.positive(k) }},
	{"limits.clientRate", kFloat, "0", "purchases per second one client address may make, on average (0: no limit)",
		func(p *parser, k string, c *Config) { c.Limits.ClientRate = p.rate(k) }},
	{"limits.clientBurst", kInt, "50", "purchases one client address may make at once before limits.clientRate paces it",
		func(p *parser, k string, c *Config) { c.Limits.ClientBurst = p.positive(k) }},
	{"demo.maxSleep", kDuration, "0s", "random sleep in [0, maxSleep) inside the purchase: the seed's race amplifier",
		func(p *parser, k string, c *Config) { c.Demo.MaxSleep = p.duration(k, true) }},
	{"log.level", kString, "info", "log level: debug, info, warn, error",
		func(p *parser, k string, c *Config) { c.Log.Level = p.oneOf(k, "debug", "info", "warn", "error") }},
}

// configFlags adds --config and a typed flag for each setting whose key
// starts with one of prefixes (all of them when none is given) to fs. The
// settings without a flag still come from the file and the environment.
func configFlags(fs *pflag.FlagSet, prefixes ...string) {
	fs.String("config", "", "config file (default: ./config.yaml when present; env SHOP_CONFIG)")
	for _, s := range settings {
		if len(prefixes) > 0 && !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s.key, p) }) {
			continue
		}
		switch s.kind {
		case kInt:
			n, _ := strconv.Atoi(s.def)
			fs.Int(s.key, n, s.usage)
		case kBool:
			fs.Bool(s.key, s.def == "true", s.usage)
		case kDuration:
			d, _ := time.ParseDuration(s.def)
			fs.Duration(s.key, d, s.usage)
		case kFloat:
			f, _ := strconv.ParseFloat(s.def, 64)
			fs.Float64(s.key, f, s.usage)
		default:
			fs.String(s.key, s.def, s.usage)
		}
	}
	if f := fs.Lookup("mysql.dsn"); f != nil {
		f.DefValue = maskPassword(f.DefValue) // --help shows no password, not even the local stack's
	}
}

// maskPassword is a DSN (user:password@...) with its password as ***.
func maskPassword(dsn string) string {
	at := strings.Index(dsn, "@")
	if at < 0 {
		return dsn
	}
	if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
		return dsn[:colon+1] + "***" + dsn[at:]
	}
	return dsn
}

// loadConfig reads the configuration for a parsed flag set: the defaults,
// the file, the environment (env: SHOP_* variables by name), the flags. A
// key in the file or a SHOP_ variable that names no setting is an error
// naming the nearest one: a typo must not leave a default in force.
func loadConfig(fs *pflag.FlagSet, env map[string]string) (Config, error) {
	v := viper.New()
	for _, s := range settings {
		v.SetDefault(s.key, s.def)
	}
	file, _ := fs.GetString("config") // registered by configFlags
	if file == "" {
		file = env["SHOP_CONFIG"]
	}
	if file == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			file = "config.yaml"
		}
	}
	if file != "" {
		f := viper.New()
		f.SetConfigFile(file)
		if err := f.ReadInConfig(); err != nil {
			return Config{}, fmt.Errorf("config: read %s: %w", file, err)
		}
		for _, k := range f.AllKeys() {
			if known(k) == "" {
				return Config{}, fmt.Errorf("config: %s: unknown key %q%s", file, k, nearest(k, func(s setting) string { return s.key }))
			}
		}
		if err := v.MergeConfigMap(f.AllSettings()); err != nil {
			return Config{}, fmt.Errorf("config: read %s: %w", file, err)
		}
	}
	// Environment: SHOP_ + the key upper-cased with dots as underscores,
	// e.g. SHOP_LOCK_ENABLED, SHOP_DEMO_MAXSLEEP.
	for name := range env {
		if strings.HasPrefix(name, "SHOP_") && name != "SHOP_CONFIG" && !scriptsEnv[name] && !slices.ContainsFunc(settings, func(s setting) bool { return envName(s.key) == name }) {
			return Config{}, fmt.Errorf("config: unknown environment variable %s%s", name, nearest(name, func(s setting) string { return envName(s.key) }))
		}
	}
	for _, s := range settings {
		if val := env[envName(s.key)]; val != "" {
			v.Set(s.key, val)
		}
	}
	for _, s := range settings {
		if f := fs.Lookup(s.key); f != nil && f.Changed {
			v.Set(s.key, f.Value.String())
		}
	}
	return parseConfig(v)
}

// scriptsEnv are the SHOP_ variables the scripts read, not the shop.
var scriptsEnv = map[string]bool{"SHOP_DB_USER": true, "SHOP_DB_PASSWORD": true, "SHOP_DB_NAME": true}

// known returns the setting's key for a key as viper has it (lower case),
// or "".
func known(lower string) string {
	for _, s := range settings {
		if strings.EqualFold(s.key, lower) {
			return s.key
		}
	}
	return ""
}

// nearest is ", did you mean X?" for the setting name closest to name by
// edit distance, or "" when none is close.
func nearest(name string, nameOf func(setting) string) string {
	best, bestD := "", len(name)/2+1
	for _, s := range settings {
		if d := editDistance(strings.ToLower(name), strings.ToLower(nameOf(s))); d < bestD {
			best, bestD = nameOf(s), d
		}
	}
	if best == "" {
		return " (see shop serve --help for the settings)"
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func envName(key string) string {
	return "SHOP_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// parseConfig converts and validates every key; the first bad one is named.
func parseConfig(v *viper.Viper) (Config, error) {
	var c Config
	p := parser{v: v}
	for _, s := range settings {
		s.parse(&p, s.key, &c)
	}
	if p.err == nil && !c.Lock.Enabled && c.Purchase.Strategy != "seed" {
		p.err = fmt.Errorf("config: lock.enabled=false (SHOP_LOCK_ENABLED) reproduces the seed's overselling and goes only with purchase.strategy=seed (SHOP_PURCHASE_STRATEGY), not %q", c.Purchase.Strategy)
	}
	if p.err == nil && c.Auth.Mode == "jwt" && (c.Auth.HMACSecretFile == "") == (c.Auth.PublicKeyFile == "") {
		p.err = errors.New("config: auth.mode=jwt needs auth.hmacSecretFile (SHOP_AUTH_HMACSECRETFILE) or auth.publicKeyFile (SHOP_AUTH_PUBLICKEYFILE), one of them")
	}
	if longest := c.Lock.AcquireTimeout + c.Demo.MaxSleep; p.err == nil && c.Server.WriteTimeout > 0 && c.Server.WriteTimeout <= longest {
		p.err = fmt.Errorf("config: server.writeTimeout (SHOP_SERVER_WRITETIMEOUT) %v must exceed lock.acquireTimeout + demo.maxSleep (%v): a buyer who waited that long would lose the answer to a purchase that was made", c.Server.WriteTimeout, longest)
	}
	if p.err != nil {
		return Config{}, p.err
	}
	return c, nil
}

// IdleTransaction is how long a transaction of the shop's may wait for its
// next statement before MariaDB ends it: mysql.idleTransactionTimeout, or
// by default the lock's session timeout plus the demo's pause (which a sale
// may sleep with its row claimed). A sale's transaction idle longer belongs
// to a holder cut off from the database, whose lock has passed on; its row
// lock must not stop the sale.
func (c Config) IdleTransaction() time.Duration {
	if c.MySQL.IdleTransactionTimeout > 0 {
		return c.MySQL.IdleTransactionTimeout
	}
	return c.ZooKeeper.SessionTimeout + c.Demo.MaxSleep
}

// parser converts viper values strictly (viper's own getters turn garbage
// into zero values) and keeps the first error.
type parser struct {
	v   *viper.Viper
	err error
}

func (p *parser) fail(key, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("config: %s (%s): %s", key, envName(key), fmt.Sprintf(format, args...))
	}
}

func (p *parser) str(key string) string {
	s := strings.TrimSpace(p.v.GetString(key))
	if s == "" {
		p.fail(key, "must not be empty")
	}
	return s
}

func (p *parser) duration(key string, zeroOK bool) time.Duration {
	s := p.str(key)
	d, err := time.ParseDuration(s)
	switch {
	case s == "":
	case err != nil:
		p.fail(key, "%q is not a duration (e.g. 250ms, 10s)", s)
	case d < 0 || (d == 0 && !zeroOK):
		p.fail(key, "%q must be positive", s)
	}
	return d
}

func (p *parser) positive(key string) int {
	s := p.str(key)
	n, err := strconv.Atoi(s)
	if s != "" && (err != nil || n <= 0) {
		p.fail(key, "%q is not a positive integer", s)
	}
	return n
}

// count is a non-negative integer.
func (p *parser) count(key string) int {
	s := p.str(key)
	n, err := strconv.Atoi(s)
	if s != "" && (err != nil || n < 0) {
		p.fail(key, "%q is not a non-negative integer", s)
	}
	return n
}

func (p *parser) boolean(key string) bool {
	s := p.str(key)
	b, err := strconv.ParseBool(s)
	if s != "" && err != nil {
		p.fail(key, "%q is not true or false", s)
	}
	return b
}

func (p *parser) oneOf(key string, allowed ...string) string {
	s := p.str(key)
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	if s != "" {
		p.fail(key, "%q is not one of %s", s, strings.Join(allowed, ", "))
	}
	return s
}

// zkAuth is zookeeper.auth: "", digest:user:password or file:PATH; the
// user:password it names. Its errors never show the value.
func (p *parser) zkAuth(key string) string {
	v := p.optional(key)
	if path, ok := strings.CutPrefix(v, "file:"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			p.fail(key, "cannot read the file it names: %v", err)
			return ""
		}
		v = strings.TrimSpace(string(b))
	}
	if v == "" {
		return ""
	}
	cred, ok := strings.CutPrefix(v, "digest:")
	user, password, found := strings.Cut(cred, ":")
	if !ok || !found || user == "" || password == "" {
		p.fail(key, "must be digest:user:password, or file:PATH of a file holding it (the value is not shown: it holds a password)")
		return ""
	}
	return cred
}

// optional is a string that may be empty.
func (p *parser) optional(key string) string {
	return strings.TrimSpace(p.v.GetString(key))
}

// rate is a non-negative number of requests per second (0: no limit).
func (p *parser) rate(key string) float64 {
	s := p.str(key)
	f, err := strconv.ParseFloat(s, 64)
	if s != "" && (err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f)) {
		p.fail(key, "%q is not a non-negative number", s)
	}
	return f
}

// proxies is server.trustedProxies: addresses or CIDRs, maybe none.
func (p *parser) proxies(key string) []string {
	out := p.items(key)
	for _, it := range out {
		if _, err := netip.ParsePrefix(it); err != nil {
			if _, err := netip.ParseAddr(it); err != nil {
				p.fail(key, "%q is not an address or a CIDR", it)
			}
		}
	}
	return out
}

// peers is dashboard.peers: base URLs, "self" for the page's own origin.
func (p *parser) peers(key string) []string {
	var out []string
	for _, peer := range strings.Split(strings.TrimSpace(p.v.GetString(key)), ",") {
		switch peer = strings.TrimRight(strings.TrimSpace(peer), "/"); peer {
		case "":
		case "self":
			out = append(out, "") // the page's own origin
		default:
			out = append(out, peer)
		}
	}
	return out
}

// list accepts a YAML list or a comma-separated string, not empty.
func (p *parser) list(key string) []string {
	out := p.items(key)
	if len(out) == 0 {
		p.fail(key, "the server list is empty")
	}
	return out
}

// items are the non-empty items of a YAML list or a comma-separated string.
func (p *parser) items(key string) []string {
	var items []string
	switch raw := p.v.Get(key).(type) {
	case []any:
		for _, it := range raw {
			items = append(items, fmt.Sprint(it))
		}
	default:
		items = strings.Split(p.v.GetString(key), ",")
	}
	var out []string
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

func (p *parser) lockPath(key string) string {
	s := p.str(key)
	if s == "" {
		return s
	}
	if strings.Contains(s, coord.GoodsNoPlaceholder) && strings.Contains(s, coord.StripePlaceholder) {
		p.fail(key, "%s and %s in one path: choose a lock per goods or per stripe", coord.GoodsNoPlaceholder, coord.StripePlaceholder)
		return s
	}
	example := strings.ReplaceAll(strings.ReplaceAll(s, coord.GoodsNoPlaceholder, "1"), coord.StripePlaceholder, "1")
	if err := zk.ValidatePath(example); err != nil {
		p.fail(key, "%s", strings.TrimPrefix(err.Error(), "zklock: "))
	}
	return s
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")
