package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/seckill-zk/seckill-zk/internal/limit"
	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Config is the shop's configuration: config.yaml, overridden by SHOP_*
// environment variables, overridden by flags.
type Config struct {
	Server struct {
		Addr string
		// MetricsAddr, if set, is where /metrics is served instead of
		// Addr: a port of its own, which a NetworkPolicy can open to the
		// scraper alone.
		MetricsAddr     string
		ShutdownTimeout time.Duration
		ReadTimeout     time.Duration
		WriteTimeout    time.Duration // 0: derived from the purchase's longest path
		IdleTimeout     time.Duration
		MaxConnections  int // 0: derived from the open-file limit
		// MaxConnectionsPerClient: 0 is half of MaxConnections.
		MaxConnectionsPerClient int
		TrustedProxies          []string
	}
	// The sections below hand their package its own options: a setting's
	// row (settings.go) parses into the package's field, where its meaning
	// and default are written, and serve passes the section on.
	MySQL struct {
		DSN          string
		InitialConns int
		// repo.Options: mysql.maxOpenConns, saleConns, maxIdleConns,
		// tlsCA, passwordFile (Password) and idleTransactionTimeout (0
		// here: IdleTransaction derives it).
		repo.Options
	}
	ZooKeeper struct {
		Servers   []string
		Namespace string // a path every path goes under; "": none
		// zk.Options: zookeeper.sessionTimeout, connectionTimeout,
		// retry.* and auth (Digest).
		zk.Options
	}
	Lock struct {
		Enabled bool
		Path    string // may hold {goodsNo} or {stripe}
		Stripes int
		Order   string // arrival (zklock.ArrivalMutex) or sequence (zklock.Mutex, Curator's)
	}
	Purchase struct {
		Strategy string // a name of service.Strategies
		// service.Config: purchase.maxWaiting, queueTarget, batchMax (the
		// batching strategies' bound: batch and allot) and onePerBuyer, and
		// lock.acquireTimeout (AcquireTimeout).
		service.Config
	}
	Allot struct {
		Path                string // the leases' nodes
		service.AllotConfig        // allot.keep
	}
	Orders service.OrdersConfig // orders.payTimeout (0: never), sweepInterval
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
		// MaxTokenLifetime bounds a token's exp less its iat.
		MaxTokenLifetime time.Duration
	}
	Room struct {
		service.RoomConfig // room.enabled, room.keep, room.shuffle
	}
	Limits struct {
		Buyer, Client limit.Options // limits.buyerRate and buyerBurst, clientRate and clientBurst; a Rate of 0: no limit
	}
	Demo struct {
		MaxSleep time.Duration
	}
	Clock struct {
		Source string        // mysql or local
		Offset time.Duration // added to this machine's clock: a test's seam
	}
	Log struct {
		Level string
	}
}

// configFlags adds --config and a flag for each setting whose key starts
// with one of prefixes (all of them when none is given) to fs. The
// settings without a flag still come from the file and the environment.
// A flag takes any text, as a variable does, and the one parser checks it
// (loadConfig): a bad value names its setting however it was given.
func configFlags(fs *pflag.FlagSet, prefixes ...string) {
	fs.String("config", "", "config file (default: ./config.yaml when present; env SHOP_CONFIG)")
	for _, s := range settings {
		if len(prefixes) > 0 && !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s.key, p) }) {
			continue
		}
		f := fs.VarPF(&settingValue{kind: s.kind, text: s.def}, s.key, "", s.usage)
		if s.kind == kBool {
			f.NoOptDefVal = "true" // --lock.enabled alone is true
		}
	}
	if f := fs.Lookup("mysql.dsn"); f != nil {
		f.DefValue = maskPassword(f.DefValue) // --help shows no password, not even the local stack's
	}
}

// settingValue is a setting's flag: its text, checked by the parser.
type settingValue struct {
	kind kind
	text string
}

func (v *settingValue) String() string     { return v.text }
func (v *settingValue) Set(s string) error { v.text = s; return nil }

// Type is the flag's type in --help.
func (v *settingValue) Type() string {
	switch v.kind {
	case kInt:
		return "int"
	case kBool:
		return "bool"
	case kDuration:
		return "duration"
	case kFloat, kRate:
		return "float"
	case kList:
		return "strings"
	}
	return "string"
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
	from := map[string]string{} // where each key set was set, for the errors
	if file != "" {
		if perm, open := writableByOthers(file); open {
			return Config{}, fmt.Errorf("config: %s may be changed by every user of this machine (mode %04o), and it says where the shop's secrets and servers are: chmod o-w it", file, perm)
		}
		f := viper.New()
		f.SetConfigFile(file)
		if err := f.ReadInConfig(); err != nil {
			return Config{}, fmt.Errorf("config: read %s: %w", file, err)
		}
		var unknown []string
		for _, k := range f.AllKeys() {
			if key := known(k); key == "" {
				unknown = append(unknown, fmt.Sprintf("%q%s", k, nearest(k, func(s setting) string { return s.key })))
			} else {
				from[key] = "in " + file
			}
		}
		if err := quotedValues(f, file); err != nil {
			return Config{}, err
		}
		if len(unknown) == 1 {
			return Config{}, fmt.Errorf("config: %s: unknown key %s", file, unknown[0])
		}
		if len(unknown) > 1 {
			return Config{}, fmt.Errorf("config: %s: unknown keys %s", file, strings.Join(unknown, ", "))
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
			from[s.key] = envName(s.key)
		}
	}
	for _, s := range settings {
		if f := fs.Lookup(s.key); f != nil && f.Changed {
			v.Set(s.key, f.Value.String())
			from[s.key] = "--" + s.key
		}
	}
	return parseConfig(v, from)
}

// quotedValues refuses a number or a true/false written in quotes in the
// file ("1000"): YAML makes it text, which a reader of the file would not
// expect the shop to take as the number.
func quotedValues(f *viper.Viper, file string) error {
	for _, s := range settings {
		if s.kind != kInt && s.kind != kFloat && s.kind != kBool {
			continue
		}
		if text, ok := f.Get(s.key).(string); ok {
			return fmt.Errorf("config: %s: %s: %q is in quotes, so text: write it without them", file, s.key, text)
		}
	}
	return nil
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
func parseConfig(v *viper.Viper, from map[string]string) (Config, error) {
	var c Config
	p := parser{v: v, from: from}
	for _, s := range settings {
		s.parse(&p, s.key, &c)
	}
	if p.err == nil && !c.Lock.Enabled && c.Purchase.Strategy != "seed" {
		p.err = fmt.Errorf("config: lock.enabled=false (SHOP_LOCK_ENABLED) reproduces the seed's overselling and goes only with purchase.strategy=seed (SHOP_PURCHASE_STRATEGY), not %q", c.Purchase.Strategy)
	}
	if p.err == nil && c.Auth.Mode == "jwt" && (c.Auth.HMACSecretFile == "") == (c.Auth.PublicKeyFile == "") {
		p.err = errors.New("config: auth.mode=jwt needs auth.hmacSecretFile (SHOP_AUTH_HMACSECRETFILE) or auth.publicKeyFile (SHOP_AUTH_PUBLICKEYFILE), one of them")
	}
	if longest := c.Purchase.AcquireTimeout + c.Demo.MaxSleep; p.err == nil && c.Server.WriteTimeout > 0 && c.Server.WriteTimeout <= longest {
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

// SaleTimeout is how long a sale under the lock may take in MySQL before
// the holder gives it up and lets the lock go: purchase.saleTimeout, or by
// default the same bound as IdleTransaction's, after which MariaDB ends
// the transaction of a holder cut off from it.
func (c Config) SaleTimeout() time.Duration {
	if c.Purchase.SaleTimeout > 0 {
		return c.Purchase.SaleTimeout
	}
	return c.ZooKeeper.SessionTimeout + c.Demo.MaxSleep
}
