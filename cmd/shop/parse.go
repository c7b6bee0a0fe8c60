package main

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/seckill-zk/seckill-zk/internal/auth"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// parser converts viper values strictly (viper's own getters turn garbage
// into zero values) and keeps the first error.
type parser struct {
	v *viper.Viper
	// from says where a key's value came from (its flag, its variable, the
	// file), for the error; a key absent has its default, named by its
	// variable.
	from map[string]string
	err  error
}

func (p *parser) fail(key, format string, args ...any) {
	if p.err == nil {
		from := p.from[key]
		if from == "" {
			from = envName(key)
		}
		p.err = fmt.Errorf("config: %s (%s): %s", key, from, fmt.Sprintf(format, args...))
		if strings.HasPrefix(from, "--") {
			p.err = fmt.Errorf("%w: %w", errUsage, p.err) // a command-line mistake: exit status 2
		}
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

// signedDuration is a duration that may be negative.
func (p *parser) signedDuration(key string) time.Duration {
	s := p.str(key)
	d, err := time.ParseDuration(s)
	if s != "" && err != nil {
		p.fail(key, "%q is not a duration (e.g. -5s, 250ms)", s)
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

// durationOrOff is a non-negative duration whose 0 turns its bound off:
// the package's negative (its zero is its default).
func (p *parser) durationOrOff(key string) time.Duration {
	if d := p.duration(key, true); d != 0 || p.str(key) == "" {
		return d
	}
	return -1
}

// offText is a durationOrOff setting's value as a log line says it.
func offText(d time.Duration) string {
	if d < 0 {
		return "off"
	}
	return d.String()
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

// secretFile is the content of the file key names, without its surrounding
// white space ("" when no file is named); the content is never shown.
func (p *parser) secretFile(key string) string {
	path := p.optional(key)
	if path == "" {
		return ""
	}
	return p.readSecret(key, path, "the file it names is empty")
}

// readSecret is the content of the file at path that key names, trimmed;
// a file that cannot be read, or holds nothing, fails key (with ifEmpty).
func (p *parser) readSecret(key, path, ifEmpty string) string {
	if !p.privateFile(key, path) {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		p.fail(key, "cannot read the file it names: %v", err)
		return ""
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		p.fail(key, "%s", ifEmpty)
	}
	return v
}

// privateFile fails key, as ssh does a private key's, when the secret file
// at path (its target, if a link: a Kubernetes Secret's files are) is
// readable or writable by users outside its owner and group: a secret any
// local user may read is no secret. A file that cannot be read is left to
// the reading to say.
func (p *parser) privateFile(key, path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return true
	}
	if perm := st.Mode().Perm(); perm&0o007 != 0 {
		p.fail(key, "the file it names is open to every user of this machine (mode %04o): chmod o-rwx it (0600, or 0640 for a group such as a Kubernetes fsGroup)", perm)
		return false
	}
	return true
}

// keptFile fails key when the file at path (a public key) may be changed
// by users outside its owner and group: one who swaps a public key signs
// the tokens the shop takes.
func (p *parser) keptFile(key, path string) {
	if perm, open := writableByOthers(path); open {
		p.fail(key, "the file it names may be changed by every user of this machine (mode %04o): chmod o-w it", perm)
	}
}

// writableByOthers reports whether users outside the file's owner and
// group may write it (its target, if a link); false when it cannot be
// read: the reading says why.
func writableByOthers(path string) (os.FileMode, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	return st.Mode().Perm(), st.Mode().Perm()&0o002 != 0
}

// zkAuth is zookeeper.auth: "", digest:user:password or file:PATH; the
// user:password it names. Its errors never show the value.
func (p *parser) zkAuth(key string) string {
	v := p.optional(key)
	if path, ok := strings.CutPrefix(v, "file:"); ok {
		// Empty, it would leave every node open to anyone, silently.
		v = p.readSecret(key, path, "the file it names is empty: want digest:user:password in it (or no zookeeper.auth, for nodes open to anyone)")
		if v == "" {
			return ""
		}
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
	// ZooKeeper keeps base64(sha1(user:password)) in every node's ACL, for
	// anyone to read: a short password falls to a dictionary at once.
	if len(password) < auth.MinSecretLen {
		p.fail(key, "the password has %d bytes, fewer than %d (every node's ACL shows its SHA-1 to anyone, so a short one is guessed offline): "+
			"make a long random one, such as openssl rand -base64 33", len(password), auth.MinSecretLen)
		return ""
	}
	if err := auth.Weak([]byte(password)); err != nil {
		p.fail(key, "the password %v (every node's ACL shows its SHA-1 to anyone)", err)
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

// autoRate is a rate, or auto: jwt with auth.mode jwt (mode), no limit
// otherwise. (The auth.* settings are parsed before the limits'.)
func (p *parser) autoRate(key, mode string, jwt float64) float64 {
	if p.str(key) != "auto" {
		return p.rate(key)
	}
	if mode == "jwt" {
		return jwt
	}
	return 0
}

// proxies is server.trustedProxies: addresses or CIDRs, maybe none.
func (p *parser) proxies(key string) []string {
	out := p.items(key)
	var prefixes []netip.Prefix
	for _, it := range out {
		pf, err := netip.ParsePrefix(it)
		if err != nil {
			a, err := netip.ParseAddr(it)
			if err != nil {
				p.fail(key, "%q is not an address or a CIDR", it)
				continue
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		prefixes = append(prefixes, pf.Masked())
		if v4, ok := mappedIPv4(pf.Masked()); ok {
			prefixes = append(prefixes, v4) // an IPv4 client seen as ::ffff:a.b.c.d is trusted by it
		}
	}
	for _, all := range []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")} {
		if covers(prefixes, all) {
			p.fail(key, "%s covers every %s address: any client could then name itself in X-Forwarded-For (and escape limits.clientRate); list your proxies' addresses",
				strings.Join(out, ","), map[bool]string{true: "IPv4", false: "IPv6"}[all.Addr().Is4()])
		}
	}
	return out
}

// mappedIPv4 is the IPv4 range an IPv6 prefix holds as IPv4-mapped
// addresses (::ffff:0:0/96, RFC 4291 2.5.5.2): all of IPv4 for a prefix
// that holds the whole mapped range, the matching IPv4 prefix for one
// inside it; false for a prefix with no mapped address.
func mappedIPv4(pf netip.Prefix) (netip.Prefix, bool) {
	mapped := netip.MustParsePrefix("::ffff:0:0/96")
	switch {
	case !pf.Addr().Is6():
		return netip.Prefix{}, false
	case pf.Bits() <= mapped.Bits() && pf.Contains(mapped.Addr()):
		return netip.MustParsePrefix("0.0.0.0/0"), true
	case pf.Bits() > mapped.Bits() && mapped.Contains(pf.Addr()):
		return netip.PrefixFrom(pf.Addr().Unmap(), pf.Bits()-mapped.Bits()).Masked(), true
	}
	return netip.Prefix{}, false
}

// covers tells whether prefixes together hold every address of space.
func covers(prefixes []netip.Prefix, space netip.Prefix) bool {
	inside := false
	for _, pf := range prefixes {
		if pf.Addr().Is4() != space.Addr().Is4() {
			continue
		}
		if pf.Bits() <= space.Bits() && pf.Contains(space.Addr()) {
			return true
		}
		if pf.Bits() > space.Bits() && space.Contains(pf.Addr()) {
			inside = true
		}
	}
	if !inside || space.Bits() == space.Addr().BitLen() {
		return false
	}
	// Split space in two: each half must be covered.
	lo := netip.PrefixFrom(space.Addr(), space.Bits()+1)
	hiAddr := space.Addr().AsSlice()
	bit := space.Bits()
	hiAddr[bit/8] |= 0x80 >> (bit % 8)
	hi, _ := netip.AddrFromSlice(hiAddr)
	return covers(prefixes, lo) && covers(prefixes, netip.PrefixFrom(hi, space.Bits()+1))
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
	example := strings.NewReplacer(coord.GoodsNoPlaceholder, "1", coord.StripePlaceholder, "1", databasePlaceholder, "seckill").Replace(s)
	if err := zk.ValidatePath(example); err != nil {
		p.fail(key, "%s", strings.TrimPrefix(err.Error(), "zklock: "))
	}
	return s
}

// namespace is zookeeper.namespace: empty, or a path.
func (p *parser) namespace(key string) string {
	s := p.optional(key)
	if s == "" {
		return ""
	}
	if err := zk.ValidatePath(s); err != nil || s == "/" {
		p.fail(key, "%q is not a ZooKeeper path such as /shop-a", s)
	}
	return s
}

// databasePlaceholder in a ZooKeeper path is mysql.dsn's database.
const databasePlaceholder = "{database}"

// zkPaths resolves the ZooKeeper paths of cfg for the database db: its
// name for {database}, and zookeeper.namespace in front of each path.
func zkPaths(cfg *Config, db string) {
	for _, path := range []*string{&cfg.Lock.Path, &cfg.Leader.Path, &cfg.Allot.Path} {
		*path = cfg.ZooKeeper.Namespace + strings.ReplaceAll(*path, databasePlaceholder, db)
	}
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")
