package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// Option is one setting of the shop under test, given to NewStack (for
// every instance and command of the stack) or to Serve (for that instance
// alone), as etcd's tests/framework/e2e gives its cluster's options: a
// typed value rather than an environment string. The shop receives it as
// the setting's environment variable (SHOP_ and the key, upper-cased, dots
// as underscores).
type Option struct {
	key   string // as in config.yaml: "purchase.strategy"
	value string
	env   string // WithEnv's: a variable that is not a setting
}

// WithSetting sets key, a setting of config.yaml ("purchase.strategy"), to
// value, formatted by fmt.Sprint (a time.Duration as "1m0s"). A key that
// config.yaml does not have fails the test that uses it: the shop would
// ignore its variable.
func WithSetting(key string, value any) Option {
	return Option{key: key, value: fmt.Sprint(value)}
}

// WithEnv is an environment variable of the shop's process that is not
// one of its settings ("GOGC=10").
func WithEnv(kv string) Option { return Option{env: kv} }

// WithStrategy is purchase.strategy: seed, batch, atomic or allot.
func WithStrategy(name string) Option { return WithSetting("purchase.strategy", name) }

// WithLogLevel is log.level: debug, info, warn or error.
func WithLogLevel(level string) Option { return WithSetting("log.level", level) }

// WithMaxSleep is demo.maxSleep, the seed's random pause under the lock.
func WithMaxSleep(d time.Duration) Option { return WithSetting("demo.maxSleep", d) }

// WithPayTimeout is orders.payTimeout: an unpaid order expires after it.
func WithPayTimeout(d time.Duration) Option { return WithSetting("orders.payTimeout", d) }

// WithSweepInterval is orders.sweepInterval, how often expired orders are
// swept.
func WithSweepInterval(d time.Duration) Option { return WithSetting("orders.sweepInterval", d) }

// WithAcquireTimeout is lock.acquireTimeout, the longest wait for a lock.
func WithAcquireTimeout(d time.Duration) Option { return WithSetting("lock.acquireTimeout", d) }

// WithQueueTarget is purchase.queueTarget, the admission's target wait.
func WithQueueTarget(d time.Duration) Option { return WithSetting("purchase.queueTarget", d) }

// WithLockPath is lock.path, the ZooKeeper path of the goods' locks.
func WithLockPath(path string) Option { return WithSetting("lock.path", path) }

// WithRoom is room.enabled, the waiting room (on by default). Off, a buyer
// past capacity hears 503 busy and one before the sale's start 409
// not_started, rather than a place.
func WithRoom(on bool) Option { return WithSetting("room.enabled", on) }

// String is the option as the shop's environment receives it.
func (o Option) String() string {
	if o.env != "" {
		return o.env
	}
	return "SHOP_" + strings.ToUpper(strings.ReplaceAll(o.key, ".", "_")) + "=" + o.value
}

// environ is opts as environment variables, each key checked against
// config.yaml's.
func environ(t testing.TB, opts []Option) []string {
	t.Helper()
	if len(opts) == 0 {
		return nil
	}
	env, err := optionEnv(SettingKeys(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// optionEnv is opts as environment variables; known holds the settings'
// keys (matched regardless of case, as viper matches them).
func optionEnv(known map[string]bool, opts []Option) ([]string, error) {
	lower := make(map[string]bool, len(known))
	for k := range known {
		lower[strings.ToLower(k)] = true
	}
	env := make([]string, len(opts))
	for i, o := range opts {
		if o.env == "" && !lower[strings.ToLower(o.key)] {
			return nil, fmt.Errorf("e2e: no setting %q in config.yaml (a typo would leave the shop at its default)", o.key)
		}
		env[i] = o.String()
	}
	return env, nil
}

var (
	keysOnce sync.Once
	keys     map[string]bool
	keysErr  error
)

// SettingKeys is every key the shop knows, as config.yaml (which cmd/shop's
// settings table generates) spells it: "server.shutdownTimeout". The map
// is shared: read it, do not change it.
func SettingKeys(t testing.TB) map[string]bool {
	t.Helper()
	keysOnce.Do(func() {
		var b []byte
		if b, keysErr = os.ReadFile(InRoot(t, "config.yaml")); keysErr != nil {
			return
		}
		var doc map[string]any
		if keysErr = yaml.Unmarshal(b, &doc); keysErr != nil {
			return
		}
		keys = map[string]bool{}
		var walk func(prefix string, m map[string]any)
		walk = func(prefix string, m map[string]any) {
			for k, v := range m {
				if sub, ok := v.(map[string]any); ok {
					walk(prefix+k+".", sub)
					continue
				}
				keys[prefix+k] = true
			}
		}
		walk("", doc)
		if !keys["server.shutdownTimeout"] || !keys["lock.path"] {
			keysErr = fmt.Errorf("config.yaml lists no settings: %v", keys)
		}
	})
	if keysErr != nil {
		t.Fatalf("e2e: the settings' keys from config.yaml: %v", keysErr)
	}
	return keys
}

// With is the stack with opts added to its shop's settings: for options
// that depend on the stack itself, as its lock path.
func (s Stack) With(t testing.TB, opts ...Option) Stack {
	t.Helper()
	s.Env = append(append([]string{}, s.Env...), environ(t, opts)...)
	return s
}
