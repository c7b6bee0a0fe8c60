package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/handler"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

func load(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	configFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if _, ok := env["SHOP_CONFIG"]; !ok {
		// An empty file: the test sees the built-in defaults, not ./config.yaml.
		empty := filepath.Join(t.TempDir(), "empty.yaml")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		env["SHOP_CONFIG"] = empty
	}
	return loadConfig(fs, env)
}

func TestConfigDefaultsAreTheSeeds(t *testing.T) {
	c, err := load(t, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"session timeout", c.ZooKeeper.SessionTimeout, 25 * time.Second},
		{"connection timeout", c.ZooKeeper.ConnectionTimeout, 20 * time.Second},
		{"retry base", c.ZooKeeper.Retry.BaseSleep, time.Second},
		{"retry count", c.ZooKeeper.Retry.MaxRetries, 10},
		{"pool", c.MySQL.MaxOpenConns, 100},
		{"idle", c.MySQL.MaxIdleConns, 100},
		{"lock on", c.Lock.Enabled, true},
		{"lock path", c.Lock.Path, "/Locks"},
		{"max sleep", c.Demo.MaxSleep, time.Duration(0)},
		{"servers", strings.Join(c.ZooKeeper.Servers, ","), "127.0.0.1:2181"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

func TestConfigFileMatchesDefaults(t *testing.T) {
	c, err := load(t, map[string]string{"SHOP_CONFIG": "../../config.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := load(t, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, d) {
		t.Errorf("config.yaml and the built-in defaults differ:\n%+v\n%+v", c, d)
	}
}

func TestConfigOverrides(t *testing.T) {
	env := map[string]string{
		"SHOP_LOCK_ENABLED":      "false",
		"SHOP_DEMO_MAXSLEEP":     "100ms",
		"SHOP_SERVER_ADDR":       "127.0.0.1:18081",
		"SHOP_MYSQL_DSN":         "u:p@tcp(db:3306)/x",
		"SHOP_ZOOKEEPER_SERVERS": "zk1:2181, zk2:2181",
		"SHOP_LOCK_PATH":         "/locks/goods/{goodsNo}",
	}
	c, err := load(t, env, "--demo.maxSleep=250ms")
	if err != nil {
		t.Fatal(err)
	}
	if c.Lock.Enabled || c.Server.Addr != "127.0.0.1:18081" || c.MySQL.DSN != "u:p@tcp(db:3306)/x" ||
		c.Lock.Path != "/locks/goods/{goodsNo}" || strings.Join(c.ZooKeeper.Servers, "|") != "zk1:2181|zk2:2181" {
		t.Errorf("environment not applied: %+v", c)
	}
	if c.Demo.MaxSleep != 250*time.Millisecond {
		t.Errorf("demo.maxSleep = %v, want the flag's 250ms over the environment's 100ms", c.Demo.MaxSleep)
	}
}

func TestConfigRejectsBadValuesNamingTheKey(t *testing.T) {
	tests := []struct {
		env, value, key string
	}{
		{"SHOP_DEMO_MAXSLEEP", "soon", "demo.maxSleep"},
		{"SHOP_ZOOKEEPER_SESSIONTIMEOUT", "0s", "zookeeper.sessionTimeout"},
		{"SHOP_ZOOKEEPER_SERVERS", " , ", "zookeeper.servers"},
		{"SHOP_LOCK_PATH", "Locks", "lock.path"},
		{"SHOP_LOCK_PATH", "/locks//x", "lock.path"},
		{"SHOP_LOCK_PATH", "/locks/", "lock.path"},
		{"SHOP_LOCK_ENABLED", "maybe", "lock.enabled"},
		{"SHOP_MYSQL_MAXOPENCONNS", "-1", "mysql.maxOpenConns"},
		{"SHOP_LOG_LEVEL", "loud", "log.level"},
		{"SHOP_PURCHASE_STRATEGY", "fast", "purchase.strategy"},
		{"SHOP_PURCHASE_MAXWAITING", "0", "purchase.maxWaiting"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			_, err := load(t, map[string]string{tt.env: tt.value})
			if err == nil {
				t.Fatalf("%s=%q accepted", tt.env, tt.value)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.key) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q should be one line naming %s", msg, tt.key)
			}
		})
	}
}

// lock.enabled=false reproduces the seed's overselling; it means nothing to
// the other strategies, so the combination is refused, naming both keys.
func TestConfigRefusesTheLockOffWithOtherStrategies(t *testing.T) {
	for _, strategy := range []string{"batch", "atomic"} {
		_, err := load(t, map[string]string{"SHOP_LOCK_ENABLED": "false", "SHOP_PURCHASE_STRATEGY": strategy})
		if err == nil || !strings.Contains(err.Error(), "lock.enabled") || !strings.Contains(err.Error(), "purchase.strategy") {
			t.Errorf("lock off with %s: %v, want an error naming lock.enabled and purchase.strategy", strategy, err)
		}
	}
	if _, err := load(t, map[string]string{"SHOP_LOCK_ENABLED": "false", "SHOP_PURCHASE_STRATEGY": "seed"}); err != nil {
		t.Errorf("lock off with seed: %v", err)
	}
}

// TestEverySettingIsDocumented: docs/configuration.md's table is the one
// settingsTable makes of the settings (UPDATE_DOCS=1 writes it), and
// config.yaml names every key.
func TestEverySettingIsDocumented(t *testing.T) {
	const doc = "../../docs/configuration.md"
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	start, end := strings.Index(string(text), tableStart), strings.Index(string(text), tableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s lacks the markers %q and %q of its generated table", doc, tableStart, tableEnd)
	}
	want := string(text[:start]) + tableStart + "\n" + settingsTable() + string(text[end:])
	if string(text) != want {
		if os.Getenv("UPDATE_DOCS") == "1" {
			if err := os.WriteFile(doc, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("%s's table of settings is not the settings' own: run UPDATE_DOCS=1 go test ./cmd/shop -run TestEverySettingIsDocumented", doc)
		}
	}
	const sample = "../../config.yaml"
	yaml, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	if want := configYAML(); string(yaml) != want {
		if os.Getenv("UPDATE_DOCS") == "1" {
			if err := os.WriteFile(sample, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("%s is not the settings' own: run UPDATE_DOCS=1 go test ./cmd/shop -run TestEverySettingIsDocumented", sample)
		}
	}
}

// configYAML is config.yaml: every setting under its section, its default
// as the value and its meaning as the comment above it.
func configYAML() string {
	var b strings.Builder
	b.WriteString(`# seckill-zk shop configuration: every setting, its default and its meaning. Generated from
# cmd/shop/settings.go (UPDATE_DOCS=1 go test ./cmd/shop -run TestEverySettingIsDocumented); edit
# the values here, the meanings there. Every key can be overridden by an environment variable
# (SHOP_ + the key upper-cased, dots as underscores: SHOP_LOCK_ENABLED, SHOP_DEMO_MAXSLEEP) and by
# a flag of the same name (--lock.enabled=false). docs/configuration.md has the same as a table.
`)
	var open []string // the sections the last key was under
	for _, s := range settings {
		parts := strings.Split(s.key, ".")
		sections, leaf := parts[:len(parts)-1], parts[len(parts)-1]
		same := 0
		for same < len(open) && same < len(sections) && open[same] == sections[same] {
			same++
		}
		for i := same; i < len(sections); i++ {
			if i == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%s%s:\n", strings.Repeat("  ", i), sections[i])
		}
		open = sections
		indent := strings.Repeat("  ", len(sections))
		for _, line := range wrap(s.usage, 100-len(indent)-2) {
			fmt.Fprintf(&b, "%s# %s\n", indent, line)
		}
		fmt.Fprintf(&b, "%s%s: %s\n", indent, leaf, yamlValue(s))
	}
	return b.String()
}

// yamlValue is a setting's default as a YAML value.
func yamlValue(s setting) string {
	switch {
	case s.def == "":
		return `""`
	case s.kind == kList:
		return "[" + strings.Join(strings.Split(s.def, ","), ", ") + "]"
	case strings.ContainsAny(s.def[:1], "{}[]&*!|>'\"%@`,#") || strings.Contains(s.def, ": ") || strings.Contains(s.def, " #"):
		return strconv.Quote(s.def)
	}
	return s.def
}

// wrap breaks text into lines of at most width bytes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

const (
	tableStart = "<!-- settings: generated from cmd/shop/settings.go by UPDATE_DOCS=1 go test ./cmd/shop -run TestEverySettingIsDocumented -->"
	tableEnd   = "<!-- end of settings -->"
)

// settingsTable is the Markdown table of every setting.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| key | default | environment | meaning |\n|---|---|---|---|\n")
	for _, s := range settings {
		def := "`" + s.def + "`"
		if s.def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", s.key, def, envName(s.key), strings.ReplaceAll(s.usage, "|", "\\|"))
	}
	return b.String()
}

// A typo in the file or the environment stops the start, naming the key
// and the nearest known one; the default would silently stay in force.
func TestConfigRefusesUnknownKeysNamingTheNearest(t *testing.T) {
	file := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(file, []byte("lock:\n  enabeld: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env       map[string]string
		bad, near string
	}{
		{map[string]string{"SHOP_CONFIG": file}, `"lock.enabeld"`, "lock.enabled"},
		{map[string]string{"SHOP_LOCK_ENABLD": "false"}, "SHOP_LOCK_ENABLD", "SHOP_LOCK_ENABLED"},
		{map[string]string{"SHOP_MYSQL_MAXIDLECONN": "5"}, "SHOP_MYSQL_MAXIDLECONN", "SHOP_MYSQL_MAXIDLECONNS"},
	} {
		_, err := load(t, tt.env)
		if err == nil || !strings.Contains(err.Error(), tt.bad) || !strings.Contains(err.Error(), "did you mean "+tt.near+"?") {
			t.Errorf("%v: %v, want an error naming %s and %s", tt.env, err, tt.bad, tt.near)
		}
	}
	// Every misspelt key of a file is named, not only the first.
	two := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(two, []byte("lock:\n  enabeld: false\npurchase:\n  strategie: batch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := load(t, map[string]string{"SHOP_CONFIG": two}); err == nil || !strings.Contains(err.Error(), "did you mean lock.enabled?") ||
		!strings.Contains(err.Error(), "did you mean purchase.strategy?") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a file with two misspelt keys: %v, want one line naming both and their nearest", err)
	}
	// A bad value is reported under the name it was given by.
	if _, err := load(t, map[string]string{"SHOP_PURCHASE_MAXWAITING": "0"}); err == nil || !strings.Contains(err.Error(), "(SHOP_PURCHASE_MAXWAITING)") {
		t.Errorf("a bad value from the environment: %v, want it named SHOP_PURCHASE_MAXWAITING", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("purchase:\n  maxWaiting: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := load(t, map[string]string{"SHOP_CONFIG": bad}); err == nil || !strings.Contains(err.Error(), "(in "+bad+")") {
		t.Errorf("a bad value from the file: %v, want the file named", err)
	}
	// The scripts' own variables are not the shop's settings.
	if _, err := load(t, map[string]string{"SHOP_DB_USER": "x"}); err != nil {
		t.Errorf("SHOP_DB_USER (scripts/stack.sh's): %v", err)
	}
}

// The derived write timeout outlasts the longest purchase: the wait for
// the lock, the demo's sleep, the lookup of a cut-off commit's outcome, and
// room for the transaction and its retries. A buyer who waited nearly the
// whole acquire time must not lose the answer to a purchase that was made.
func TestTheWriteTimeoutOutlastsTheLongestPurchase(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"SHOP_LOCK_ACQUIRETIMEOUT": "2m", "SHOP_DEMO_MAXSLEEP": "1s"},
		{"SHOP_LOCK_ACQUIRETIMEOUT": "500ms"},
	} {
		c, err := load(t, env)
		if err != nil {
			t.Fatal(err)
		}
		longest := c.Purchase.AcquireTimeout + c.Demo.MaxSleep + service.DefaultOutcomeTimeout
		if w := httpLimits(c, 0).write; w < longest+20*time.Second {
			t.Errorf("%v: write timeout %v, want at least %v (acquire %v + sleep %v + outcome %v) and 20 s for the transaction",
				env, w, longest+20*time.Second, c.Purchase.AcquireTimeout, c.Demo.MaxSleep, service.DefaultOutcomeTimeout)
		}
	}
}

// Each setting's row parses into a field of its own: a value other than
// the default, given in the environment, changes the Config, and no two
// settings change the same field.
func TestEverySettingReachesItsOwnField(t *testing.T) {
	candidates := map[kind][]string{
		kString:   {"batch", "debug", "/another/path", "127.0.0.1:9999", "someone", "jwt", "local", "sequence", "digest:user:a-password-of-at-least-32-bytes-long"},
		kInt:      {"7"},
		kBool:     {"false", "true"},
		kDuration: {"77s", "7s"},
		kList:     {"h1:1,h2:2", "10.0.0.0/8"},
		kFloat:    {"2.5"},
		kRate:     {"2.5"},
	}
	// A file's path, for the settings that read one (mysql.passwordFile).
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	candidates[kString] = append(candidates[kString], secret)
	// What a setting can be changed only with: set for its base and its
	// change alike.
	needs := map[string]map[string]string{"auth.mode": {"SHOP_AUTH_HMACSECRETFILE": "/s"}}
	changedBy := map[string]string{} // the Config as text after a change → the setting that made it
	for _, s := range settings {
		env := func(extra ...string) map[string]string {
			e := map[string]string{}
			for k, v := range needs[s.key] {
				e[k] = v
			}
			for i := 0; i+1 < len(extra); i += 2 {
				e[extra[i]] = extra[i+1]
			}
			return e
		}
		base, err := load(t, env())
		if err != nil {
			t.Fatal(err)
		}
		var changed string
		for _, v := range candidates[s.kind] {
			if v == s.def {
				continue
			}
			c, err := load(t, env(envName(s.key), v))
			if err != nil {
				continue // not a value this key takes: try the next
			}
			if got := fmt.Sprintf("%+v", c); got != fmt.Sprintf("%+v", base) {
				changed = got
				break
			}
		}
		if changed == "" {
			t.Errorf("%s: no value changed the Config: its row parses into nothing", s.key)
			continue
		}
		if other, ok := changedBy[changed]; ok {
			t.Errorf("%s and %s change the Config the same way: one field for two settings", s.key, other)
		}
		changedBy[changed] = s.key
	}
}

func TestLockPathAdviceForASaleOfManyGoods(t *testing.T) {
	for _, c := range []struct {
		strategy, path string
		warn           bool
	}{
		{"seed", "/Locks", true},
		{"seed", "/locks/goods/{goodsNo}", false},
		{"seed", "/locks/stripe/{stripe}", true},
		{"batch", "/Locks", false},
		{"batch", "/locks/goods/{goodsNo}", true},
		{"batch", "/locks/stripe/{stripe}", false},
		{"atomic", "/locks/goods/{goodsNo}", false},
	} {
		st, _ := service.StrategyNamed(c.strategy)
		if got := lockPathAdvice(st, coord.NewPaths(c.path, 16)); (got != "") != c.warn {
			t.Errorf("%s on %s: advice %q, want a warning: %t", c.strategy, c.path, got, c.warn)
		}
	}
}

// zookeeper.auth takes digest:user:password or a file holding it; a bad
// value is refused without being shown.
func TestZooKeeperAuthSetting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "zk-auth")
	if err := os.WriteFile(file, []byte("digest:shop:s3cret-from-file-and-long-enough-to-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ value, want string }{
		{"", ""},
		{"digest:shop:s3cret-long-enough-for-the-rule-of-32", "shop:s3cret-long-enough-for-the-rule-of-32"},
		{"file:" + file, "shop:s3cret-from-file-and-long-enough-to-pass"},
	} {
		c, err := load(t, map[string]string{"SHOP_ZOOKEEPER_AUTH": tc.value})
		if err != nil || c.ZooKeeper.Digest != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.value, c.ZooKeeper.Digest, err, tc.want)
		}
	}
	// An empty file would leave every node open to anyone, without a word.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A password shorter than a token's secret: every node's ACL shows its
	// SHA-1 to anyone. A file others may read: no secret.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.WriteFile(open, []byte("digest:shop:s3cret-from-file-and-long-enough-to-pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	for _, bad := range []string{"shop:s3cret-no-scheme", "digest:shop", "digest::s3cret-no-user", "sasl:shop:s3cret-other", "file:" + empty,
		"digest:shop:s3cret-31-bytes-long-0123456789", "file:" + open,
		"file:" + filepath.Join(t.TempDir(), "missing")} {
		_, err := load(t, map[string]string{"SHOP_ZOOKEEPER_AUTH": bad})
		if err == nil || !strings.Contains(err.Error(), "zookeeper.auth") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: %v; want a refusal naming the key, not the value", bad, err)
		}
	}
}

// mysql.passwordFile reads the DSN user's password from a file (a
// Kubernetes Secret mounted as one); an empty or missing file is refused
// without its content shown.
func TestMySQLPasswordFileSetting(t *testing.T) {
	dir := t.TempDir()
	file, empty := filepath.Join(dir, "password"), filepath.Join(dir, "empty")
	if err := os.WriteFile(file, []byte("s3cret-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := load(t, map[string]string{"SHOP_MYSQL_PASSWORDFILE": file}); err != nil || c.MySQL.Password != "s3cret-from-file" {
		t.Errorf("from a file: %q, %v", c.MySQL.Password, err)
	}
	if c, err := load(t, map[string]string{}); err != nil || c.MySQL.Password != "" {
		t.Errorf("without one: %q, %v; want the DSN's", c.MySQL.Password, err)
	}
	for _, bad := range []string{empty, filepath.Join(dir, "missing")} {
		if _, err := load(t, map[string]string{"SHOP_MYSQL_PASSWORDFILE": bad}); err == nil || !strings.Contains(err.Error(), "mysql.passwordFile") {
			t.Errorf("%s: %v; want a refusal naming the key", bad, err)
		}
	}
}

// auth.mode jwt needs one key; a key without jwt is a mistake.
func TestAuthSettings(t *testing.T) {
	for _, tc := range []struct {
		env map[string]string
		ok  bool
	}{
		{map[string]string{}, true},
		{map[string]string{"SHOP_AUTH_MODE": "jwt"}, false},
		{map[string]string{"SHOP_AUTH_MODE": "jwt", "SHOP_AUTH_HMACSECRETFILE": "/s", "SHOP_AUTH_PUBLICKEYFILE": "/p"}, false},
		{map[string]string{"SHOP_AUTH_MODE": "jwt", "SHOP_AUTH_HMACSECRETFILE": "/s"}, true},
		{map[string]string{"SHOP_AUTH_HMACSECRETFILE": "/s"}, true}, // serve warns: tokens are not asked for
		{map[string]string{"SHOP_AUTH_MODE": "oauth"}, false},
		{map[string]string{"SHOP_LIMITS_BUYERRATE": "0.5", "SHOP_LIMITS_CLIENTRATE": "100"}, true},
		{map[string]string{"SHOP_LIMITS_BUYERRATE": "-1"}, false},
		{map[string]string{"SHOP_SERVER_TRUSTEDPROXIES": "10.0.0.0/8, 192.0.2.1"}, true},
		{map[string]string{"SHOP_SERVER_TRUSTEDPROXIES": "proxy.example"}, false},
	} {
		if _, err := load(t, tc.env); (err == nil) != tc.ok {
			t.Errorf("%v: %v, want ok %v", tc.env, err, tc.ok)
		}
	}
}

// auth.mode none warns on an address other machines reach: loopback tells.
func TestLoopbackAddresses(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{{"127.0.0.1", true}, {"::1", true}, {"0.0.0.0", false}, {"::", false}, {"10.1.2.3", false}} {
		if got := loopback(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 8080}); got != tc.want {
			t.Errorf("%s: loopback %v, want %v", tc.ip, got, tc.want)
		}
	}
}

// --help shows no password: the DSN's default is masked (the default
// itself is unchanged).
func TestHelpShowsNoPassword(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	configFlags(fs)
	if usage := fs.FlagUsages(); strings.Contains(usage, "seckill:seckill@") || !strings.Contains(usage, "seckill:***@tcp(127.0.0.1:3306)/seckill") {
		t.Fatalf("--help's mysql.dsn default: %s", usage[strings.Index(usage, "--mysql.dsn"):][:120])
	}
	c, err := load(t, map[string]string{})
	if err != nil || c.MySQL.DSN != "seckill:seckill@tcp(127.0.0.1:3306)/seckill" {
		t.Fatalf("the default DSN itself: %q, %v", c.MySQL.DSN, err)
	}
	for in, want := range map[string]string{"u:p@tcp(h)/d": "u:***@tcp(h)/d", "u@tcp(h)/d": "u@tcp(h)/d", "tcp(h)/d": "tcp(h)/d"} {
		if got := maskPassword(in); got != want {
			t.Errorf("maskPassword(%q) = %q, want %q", in, got, want)
		}
	}
}

// The README's table of the settings a newcomer turns first names real
// keys with their real defaults (where it gives one in backticks).
func TestTheReadmesSettingsAreTheSettings(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	defaults := map[string]string{}
	for _, s := range settings {
		defaults[s.key] = s.def
	}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows++
		def := strings.TrimSpace(cells[2])
		for _, key := range strings.Split(strings.TrimSpace(cells[1]), ", ") {
			key = strings.Trim(key, "`")
			want, known := defaults[key]
			switch {
			case !known:
				t.Errorf("README's settings table names %q, which is no setting", key)
			case strings.HasPrefix(def, "`") && def != "`"+want+"`":
				t.Errorf("README's settings table gives %s the default %s; settings.go says %q", key, def, want)
			}
		}
	}
	if rows == 0 {
		t.Error("README's Configuration section has no table of settings")
	}
}

// The ZooKeeper paths follow the database ({database}) and go under
// zookeeper.namespace: deployments sharing an ensemble are kept apart.
func TestZooKeeperPathsFollowTheDatabaseAndTheNamespace(t *testing.T) {
	c, err := load(t, map[string]string{"SHOP_ZOOKEEPER_NAMESPACE": "/shop-a"})
	if err != nil {
		t.Fatal(err)
	}
	zkPaths(&c, "sales_eu")
	if c.Leader.Path != "/shop-a/seckill/sales_eu/leader" || c.Allot.Path != "/shop-a/seckill/sales_eu/leases" || c.Lock.Path != "/shop-a/Locks" {
		t.Errorf("paths %q %q %q", c.Leader.Path, c.Allot.Path, c.Lock.Path)
	}
	for _, bad := range []string{"shop-a", "/", "/shop-a/"} {
		if _, err := load(t, map[string]string{"SHOP_ZOOKEEPER_NAMESPACE": bad}); err == nil || !strings.Contains(err.Error(), "zookeeper.namespace") {
			t.Errorf("namespace %q: %v, want refused", bad, err)
		}
	}
}

// The limits are on by default where buyers are strangers (auth.mode jwt)
// and off for the anonymous demo; a rate given, 0 included, is kept.
func TestTheLimitsFollowTheAuthModeByDefault(t *testing.T) {
	jwt := map[string]string{"SHOP_AUTH_MODE": "jwt", "SHOP_AUTH_HMACSECRETFILE": "/s"}
	for _, c := range []struct {
		name          string
		env           map[string]string
		buyer, client float64
	}{
		{"auth.mode none", map[string]string{}, 0, 0},
		{"auth.mode jwt", jwt, autoBuyerRate, autoClientRate},
		{"auth.mode jwt, the limits turned off", merge(jwt, map[string]string{"SHOP_LIMITS_BUYERRATE": "0", "SHOP_LIMITS_CLIENTRATE": "0"}), 0, 0},
		{"auth.mode none, a buyer rate given", map[string]string{"SHOP_LIMITS_BUYERRATE": "3"}, 3, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := load(t, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Limits.Buyer.Rate != c.buyer || cfg.Limits.Client.Rate != c.client {
				t.Errorf("buyer rate %v, client rate %v; want %v and %v", cfg.Limits.Buyer.Rate, cfg.Limits.Client.Rate, c.buyer, c.client)
			}
		})
	}
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// A secret in a file any user of the machine may read is refused, as ssh
// refuses such a private key: the DSN user's password, the tokens' HMAC
// secret, ZooKeeper's digest (above). Owner and group may read it (a
// Kubernetes Secret with an fsGroup is mode 0440).
func TestSecretFilesOpenToEveryUserAreRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(strings.Repeat("s", 40)+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, mode); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, mode := range []os.FileMode{0o644, 0o604, 0o602, 0o666} {
		f := write(fmt.Sprintf("open-%o", mode), mode)
		for _, env := range []map[string]string{
			{"SHOP_MYSQL_PASSWORDFILE": f},
			{"SHOP_AUTH_MODE": "jwt", "SHOP_AUTH_HMACSECRETFILE": f},
		} {
			if _, err := load(t, env); err == nil || !strings.Contains(err.Error(), "open to every user") {
				t.Errorf("%v, mode %04o: %v; want a refusal", env, mode, err)
			}
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400, 0o640, 0o440} {
		f := write(fmt.Sprintf("private-%o", mode), mode)
		if _, err := load(t, map[string]string{"SHOP_MYSQL_PASSWORDFILE": f}); err != nil {
			t.Errorf("mode %04o: %v; want it accepted", mode, err)
		}
	}
}

// server.trustedProxies that hold every address let any client name
// itself in X-Forwarded-For (a rotating one beat limits.clientRate=1):
// refused, alone or together; real proxies' ranges are accepted. IPv4-mapped
// IPv6 addresses (::ffff:a.b.c.d) are IPv4 clients: ::ffff:0:0/96 trusted
// every one of them.
func TestTrustedProxiesThatCoverEveryAddressAreRefused(t *testing.T) {
	for _, bad := range []string{"0.0.0.0/0", "::/0", "10.0.0.0/8,0.0.0.0/0", "0.0.0.0/1,128.0.0.0/1", "0.0.0.0/2,64.0.0.0/2,128.0.0.0/1", "8000::/1,::/1",
		"::ffff:0:0/96", "::/64", "::ffff:0:0/97,128.0.0.0/1", "::ffff:0.0.0.0/97,::ffff:128.0.0.0/97"} {
		if _, err := load(t, map[string]string{"SHOP_SERVER_TRUSTEDPROXIES": bad}); err == nil || !strings.Contains(err.Error(), "covers every") {
			t.Errorf("%s: %v; want a refusal", bad, err)
		}
	}
	for _, good := range []string{"10.0.0.0/8,172.16.0.0/12,192.168.0.0/16", "0.0.0.0/1", "10.1.2.3", "fd00::/8", "0.0.0.0/2,64.0.0.0/2,128.0.0.0/2",
		"::ffff:10.0.0.0/104", "::ffff:0:0/97"} {
		if _, err := load(t, map[string]string{"SHOP_SERVER_TRUSTEDPROXIES": good}); err != nil {
			t.Errorf("%s: %v; want it accepted", good, err)
		}
	}
}

// The chart's defaults are a setup the shop does not warn against: its
// strategy and its lock path agree (a batch strategy with a lock per goods
// pays a hold per goods' batch, about one buyer each).
func TestTheChartsDefaultsFollowTheShopsAdvice(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/helm/seckill/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Shop struct {
			Config map[string]any `yaml:"config"`
		} `yaml:"shop"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(values.Shop.Config)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	configFlags(fs)
	if err := fs.Parse([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(fs, map[string]string{})
	if err != nil {
		t.Fatalf("the chart's shop.config: %v", err)
	}
	// The chart sets what it chooses otherwise, not the shop's defaults
	// again (a second place a default would have to follow), except what
	// its templates read: the grace period follows server.shutdownTimeout.
	readByTheChart := map[string]bool{"server.shutdownTimeout": true}
	for _, s := range settings {
		v, ok := chartValue(values.Shop.Config, s.key)
		if !ok || readByTheChart[s.key] {
			continue
		}
		if sameValue(s, v) {
			t.Errorf("the chart's shop.config.%s is %q, the shop's default: leave it out", s.key, v)
		}
	}
	st, ok := service.StrategyNamed(cfg.Purchase.Strategy)
	if !ok {
		t.Fatalf("the chart's strategy %q is not one the shop knows", cfg.Purchase.Strategy)
	}
	if msg := lockPathAdvice(st, coord.NewPaths(cfg.Lock.Path, cfg.Lock.Stripes)); msg != "" {
		t.Errorf("the chart's defaults (strategy %s, lock.path %s) make the shop warn: %s", cfg.Purchase.Strategy, cfg.Lock.Path, msg)
	}
}

// A setting's default is its package's: the package's zero value, with
// the package's own defaults applied, is what the shop runs with when
// nothing is configured. (A bool's zero is false: purchase.onePerBuyer's
// default, true, is the setting's alone.) The values the chart sets are
// checked against the shop's advice in TestTheChartsDefaultsFollowTheShopsAdvice.
func TestTheSettingsDefaultsAreThePackages(t *testing.T) {
	c, err := load(t, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	got, want := c.Purchase.Config.WithDefaults(), service.Config{}.WithDefaults()
	want.OnePerBuyer = got.OnePerBuyer
	if !reflect.DeepEqual(got, want) {
		t.Errorf("purchase: the settings' defaults %+v, the package's %+v", got, want)
	}
	if got, want := c.Orders.WithDefaults(), (service.OrdersConfig{}).WithDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("orders: the settings' defaults %+v, the package's %+v", got, want)
	}
	if c.Allot.Keep != service.DefaultAllotKeep || c.Room.Keep != service.DefaultRoomKeep {
		t.Errorf("allot.keep %v, room.keep %v; the package's %v and %v", c.Allot.Keep, c.Room.Keep, service.DefaultAllotKeep, service.DefaultRoomKeep)
	}
	// 0 in a setting whose package reads 0 as its default turns the bound
	// off: the package's negative.
	off, err := load(t, map[string]string{"SHOP_PURCHASE_QUEUETARGET": "0s", "SHOP_ORDERS_PAYTIMEOUT": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if q, p := off.Purchase.Config.WithDefaults().QueueTarget, off.Orders.WithDefaults().PayTimeout; q >= 0 || p >= 0 {
		t.Errorf("purchase.queueTarget 0 and orders.payTimeout 0 reach the service as %v and %v, want them off (negative)", q, p)
	}
}

// chartValue is the value at key (dotted) in the chart's shop.config, as
// a setting's text (a list comma separated).
func chartValue(config map[string]any, key string) (string, bool) {
	var v any = config
	for _, part := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[part]; !ok {
			return "", false
		}
	}
	if list, ok := v.([]any); ok {
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, ","), true
	}
	return fmt.Sprint(v), true
}

// sameValue reports whether v is s's default (durations by their length).
func sameValue(s setting, v string) bool {
	if s.kind == kDuration {
		a, err1 := time.ParseDuration(s.def)
		b, err2 := time.ParseDuration(v)
		return err1 == nil && err2 == nil && a == b
	}
	return v == s.def
}

// A number or a true/false in quotes in the file is text to YAML: the
// shop says so rather than take it for the number a reader sees. Written
// without quotes it is taken.
func TestAQuotedNumberInTheFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"purchase:\n  maxWaiting: \"1000\"\n", `purchase.maxWaiting: "1000" is in quotes`},
		{"lock:\n  enabled: \"false\"\n", `lock.enabled: "false" is in quotes`},
		{"purchase:\n  maxWaiting: 1000\n", ""},
	} {
		file := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(file, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := load(t, map[string]string{"SHOP_CONFIG": file})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// A public key, or the config file, that any user of the machine may
// change is refused: one who swaps the key signs the tokens the shop
// takes; one who edits the file points the shop at a database or a
// ZooKeeper of theirs. Readable by all is fine for both (a public key is
// public; the repository's config.yaml is mode 0644).
func TestFilesEveryUserMayChangeAreRefused(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o666, 0o602, 0o644} {
		key := filepath.Join(dir, fmt.Sprintf("key-%o.pem", mode))
		file := filepath.Join(dir, fmt.Sprintf("config-%o.yaml", mode))
		for _, f := range []string{key, file} {
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f, mode); err != nil {
				t.Fatal(err)
			}
		}
		refused := mode&0o002 != 0
		_, err := load(t, map[string]string{"SHOP_AUTH_MODE": "jwt", "SHOP_AUTH_PUBLICKEYFILE": key})
		if got := err != nil && strings.Contains(err.Error(), "may be changed by every user"); got != refused {
			t.Errorf("a public key of mode %04o: %v; want refused %v", mode, err, refused)
		}
		_, err = load(t, map[string]string{"SHOP_CONFIG": file})
		if got := err != nil && strings.Contains(err.Error(), "may be changed by every user"); got != refused {
			t.Errorf("a config file of mode %04o: %v; want refused %v", mode, err, refused)
		}
	}
}

// A secret made by hand (a letter repeated, a word repeated) is refused
// though it is long enough: ZooKeeper's password at the start, the tokens'
// HMAC secret when the edge is built. A random one is taken.
func TestSecretsMadeByHandAreRefused(t *testing.T) {
	if _, err := load(t, map[string]string{"SHOP_ZOOKEEPER_AUTH": "digest:shop:" + strings.Repeat("a", 40)}); err == nil || !strings.Contains(err.Error(), "made by hand") {
		t.Errorf("zookeeper.auth with 40 × a: %v, want it refused", err)
	}
	if _, err := load(t, map[string]string{"SHOP_ZOOKEEPER_AUTH": "digest:shop:UFltCCeUBM6SBqzGEEH8PbRi1h1o5AWevGprmVitHxtO"}); err != nil {
		t.Errorf("zookeeper.auth with a random password: %v", err)
	}
	dir := t.TempDir()
	for secret, weak := range map[string]bool{strings.Repeat("password", 5): true, "8F5oLvlaptxVuXh+cLiSY2ypm8OqmGsweDpFeQnTjdiX": false} {
		f := filepath.Join(dir, fmt.Sprintf("secret-%v", weak))
		if err := os.WriteFile(f, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		var cfg Config
		cfg.Auth.Mode, cfg.Auth.HMACSecretFile = "jwt", f
		err := who(cfg, &handler.Services{})
		if got := err != nil && strings.Contains(err.Error(), "made by hand"); got != weak {
			t.Errorf("an HMAC secret %.12q…: %v; want refused %v", secret, err, weak)
		}
	}
}
