package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Root is a ZooKeeper path under which the shop makes its nodes: the lock
// path's directory, the election's, the leases'. The shop owns it: it makes
// it (and its missing ancestors) as a persistent node with its ACL, where
// the recipes would make containers that ZooKeeper deletes once empty and
// anyone could then make again with an ACL of their own.
type Root struct {
	Path    string
	Setting string // the setting that names it (lock.path, …), for messages
	// Exclusive: a root stamped by another deployment stops the start
	// (an election or leases shared by two deployments leave one's orders
	// unswept, or its stock miscounted). A lock shared is only slower: a
	// warning.
	Exclusive bool
}

// stampPrefix begins the data the shop writes into a root it owns: which
// deployment the nodes under it serve (Deployment.stamp). An earlier
// release's stamp named the database alone: taken as no stamp.
const stampPrefix = "seckill-zk deployment="

// Deployment is who a shop's roots serve: the deployment's identity, made
// once and kept in its database (not the database's name, which two
// deployments on two servers may share), and that database's name, for
// the messages.
type Deployment struct {
	ID, Database string
}

func (d Deployment) stamp() string { return stampPrefix + d.ID + " database=" + d.Database }

// NoAuthFor is how long a NoAuth that a purchase or the election met keeps
// the roots reported unusable (readiness, metric) after the last one.
const NoAuthFor = 10 * time.Second

// Roots are the roots one shop owns on its ZooKeeper. Claim makes them its
// own at start; Recheck, run periodically, makes one that was deleted again
// and finds one whose ACL changed; NoAuth is told of ZooKeeper's refusals
// on the way of a purchase. Err says whether they are usable now.
type Roots struct {
	c          *zk.Client
	roots      []Root
	deployment Deployment
	log        *slog.Logger

	mu      sync.Mutex
	err     error     // the last check's finding
	noAuth  error     // the last refusal met on a purchase's or the election's way
	noAuthT time.Time // when
	refused int64     // refusals met, in all
}

// NewRoots returns the roots of a shop of deployment d on c.
func NewRoots(c *zk.Client, d Deployment, log *slog.Logger, roots ...Root) *Roots {
	return &Roots{c: c, roots: roots, deployment: d, log: log}
}

// RootOf is the directory a lock path template owns: the path up to its
// first segment with a placeholder ("/Locks/{goodsNo}" → "/Locks"), the
// path itself when it has none.
func RootOf(template string) string {
	i := strings.IndexByte(template, '{')
	if i < 0 {
		return template
	}
	if d := path.Dir(template[:i+1]); d != "" {
		return d
	}
	return "/"
}

// Claim makes every root the shop's: an error, which should stop the
// start, names the root, its setting and what is wrong.
func (r *Roots) Claim(ctx context.Context) error {
	for _, root := range r.roots {
		if err := r.claim(ctx, root, true); err != nil {
			return err
		}
	}
	return nil
}

// Recheck checks every root again: one deleted is made again, one whose ACL
// is no longer the shop's is reported (Err) until it is again.
func (r *Roots) Recheck(ctx context.Context) {
	var found error
	for _, root := range r.roots {
		if err := r.claim(ctx, root, false); err != nil {
			found = err
			break
		}
	}
	r.mu.Lock()
	changed := (found == nil) != (r.err == nil)
	r.err = found
	r.mu.Unlock()
	switch {
	case changed && found != nil:
		r.log.Error("a ZooKeeper path of the shop is not its own: purchases or the election are refused there", "err", found)
	case changed:
		r.log.Info("the shop's ZooKeeper paths are its own again")
	}
}

// NoAuth tells the roots that ZooKeeper refused the shop on err's way
// (zk.ErrNoAuth): it counts, and Err reports it for NoAuthFor.
func (r *Roots) NoAuth(err error) {
	r.mu.Lock()
	first := r.noAuth == nil || time.Since(r.noAuthT) > NoAuthFor
	r.noAuth, r.noAuthT = err, time.Now()
	r.refused++
	r.mu.Unlock()
	if first {
		r.log.Error("ZooKeeper refused the shop (NoAuth): a node on its path has an ACL that is not the shop's", "err", err)
	}
}

// Refused is how many NoAuth refusals NoAuth was told of.
func (r *Roots) Refused() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

// Err is why the roots are not usable now, nil when they are: the last
// Recheck's finding, or a NoAuth met within NoAuthFor.
func (r *Roots) Err(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.noAuth != nil && time.Since(r.noAuthT) < NoAuthFor {
		return fmt.Errorf("ZooKeeper refused the shop %s ago: %w", time.Since(r.noAuthT).Round(time.Second), r.noAuth)
	}
	return nil
}

// claim makes root the shop's, or says why it is not. atStart: a stamp of
// another database is an error for an exclusive root (later, a warning
// was given at the start already).
func (r *Roots) claim(ctx context.Context, root Root, atStart bool) error {
	where := fmt.Sprintf("zookeeper path %s (%s)", root.Path, root.Setting)
	if root.Path == "/" {
		return fmt.Errorf("%s: the shop cannot own ZooKeeper's root; give the path a directory of its own", where)
	}
	if err := r.makePath(ctx, root.Path); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	acl, st, err := r.c.GetACL(ctx, root.Path)
	if errors.Is(err, zk.ErrNoNode) { // deleted meanwhile: the next check makes it again
		return fmt.Errorf("%s: deleted while the shop made it", where)
	}
	why := ""
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		why = "its ACL does not let the shop's identity even read it"
	case err != nil:
		return fmt.Errorf("%s: read its ACL: %w", where, err)
	default:
		why = notOwned(acl, r.c.ACL())
	}
	if why != "" {
		return fmt.Errorf("%s is not this shop's: %s; remove it as its owner (zkCli: deleteall %s) or give the shop another path (%s, zookeeper.namespace)",
			where, why, root.Path, root.Setting)
	}
	if why := r.parentOpen(ctx, root.Path); why != "" {
		return fmt.Errorf("%s: %s; give the shop a namespace whose every node is its own (zookeeper.namespace, made by the shop), or close the parent's ACL to others (zkCli: setAcl)",
			where, why)
	}
	if st.EphemeralOwner == zk.ContainerOwner && st.NumChildren == 0 {
		// An earlier release's container: made again persistent.
		if err := r.c.Delete(ctx, root.Path, st.Version); err == nil {
			return r.claim(ctx, root, atStart)
		}
	}
	data, st, err := r.c.Get(ctx, root.Path)
	if err != nil {
		return fmt.Errorf("%s: read it: %w", where, err)
	}
	stamp := r.deployment.stamp()
	switch other, ours := strings.CutPrefix(string(data), stampPrefix); {
	case string(data) == stamp:
	case !ours || other == "":
		if _, err := r.c.Set(ctx, root.Path, []byte(stamp), st.Version); err != nil && !errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("%s: write which deployment it serves: %w", where, err)
		}
	case root.Exclusive:
		return fmt.Errorf("%s serves another deployment (%s), this shop deployment %s (database %s): two deployments would share it; give each its own (%s, zookeeper.namespace), "+
			"or, if that deployment is gone (its database dropped and made again), delete the path as its owner (zkCli: deleteall %s)",
			where, other, r.deployment.ID, r.deployment.Database, root.Setting, root.Path)
	case atStart:
		r.log.Warn("a ZooKeeper path the shop uses serves another deployment too: the two deployments queue behind each other",
			"path", root.Path, "setting", root.Setting, "other", other, "deployment", r.deployment.ID)
	}
	return nil
}

// Open tells whether the shop's nodes are open to anyone: without
// zookeeper.auth every client may hold its locks, queue in its election or
// delete its nodes, and the shop cannot tell.
func (r *Roots) Open() bool {
	for _, e := range r.c.ACL() {
		if e.Scheme == "world" && e.Perms&zk.PermDelete != 0 {
			return true
		}
	}
	return false
}

// OpenWarning is what the shop says of its open paths (see Open).
const OpenWarning = "the shop's ZooKeeper paths are open to anyone (no zookeeper.auth): any client that reaches ZooKeeper may hold the purchase locks or the election, or delete the shop's nodes, and the shop cannot tell; set zookeeper.auth"

// parentOpen says why root's parent lets others take root away, "" when
// it does not. ZooKeeper checks a delete against the parent's ACL, so an
// identity that may delete (or, with admin, grant itself delete) in the
// parent deletes root whenever it is empty (a lock path between two
// holders) and makes it again as its own: the shop's purchases are then
// refused for good. One that may create there may make the shop's node
// before it does. The ancestors above the parent cannot take root away:
// a node is deleted only empty, and the parent holds root. Paths open to
// anyone (no zookeeper.auth) are not checked: everything is open there
// (see Open).
func (r *Roots) parentOpen(ctx context.Context, root string) string {
	if r.Open() {
		return ""
	}
	parent := path.Dir(root)
	acl, _, err := r.c.GetACL(ctx, parent)
	if err != nil {
		return fmt.Sprintf("its parent %s's ACL cannot be read (%v)", parent, err)
	}
	mine := r.c.ACL()
	for _, e := range acl {
		if extra := e.Perms & (zk.PermCreate | zk.PermDelete | zk.PermAdmin) &^ allowedIn(mine, e.Scheme, e.ID); extra != 0 {
			return fmt.Sprintf("its parent %s lets %s do %s there: it may delete %s while it is empty and make it again as its own", parent, who(e), perms(extra), root)
		}
	}
	return ""
}

// makePath makes p and its missing ancestors persistent, with the client's
// ACL.
func (r *Roots) makePath(ctx context.Context, p string) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		prefix := p[:i]
		if ok, _, err := r.c.Exists(ctx, prefix); err != nil {
			return err
		} else if ok {
			continue
		}
		_, err := r.c.CreatePersistent(ctx, prefix, nil)
		switch {
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("ZooKeeper refused to make %s: its parent %s is not the shop's (%w)", prefix, path.Dir(prefix), err)
		case err != nil && !errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("make %s: %w", prefix, err)
		}
	}
	return nil
}

// notOwned says why a node with acl is not the shop's, whose nodes get
// mine: "" when it is. It is the shop's when the shop may do there all it
// needs (read, make and delete children, write its stamp) and nobody else
// may do more than mine lets them.
func notOwned(acl, mine []zk.ACL) string {
	const needs = zk.PermRead | zk.PermCreate | zk.PermDelete | zk.PermWrite
	var have int32
	for _, e := range acl {
		allowed := allowedIn(mine, e.Scheme, e.ID)
		if extra := e.Perms &^ allowed; extra != 0 {
			return fmt.Sprintf("its ACL lets %s do %s", who(e), perms(extra))
		}
		if e.Perms&needs == needs && allowed&needs == needs {
			have = needs
		}
	}
	if have != needs {
		return fmt.Sprintf("its ACL (%s) does not let the shop's identity make and delete nodes there", aclString(acl))
	}
	return ""
}

// allowedIn is what the shop's ACL mine lets the identity scheme:id do.
func allowedIn(mine []zk.ACL, scheme, id string) int32 {
	for _, m := range mine {
		if m.Scheme == scheme && m.ID == id {
			return m.Perms
		}
	}
	return 0
}

// who names an ACL entry's identity without its password hash.
func who(e zk.ACL) string {
	id, _, _ := strings.Cut(e.ID, ":")
	return e.Scheme + ":" + id
}

func aclString(acl []zk.ACL) string {
	var parts []string
	for _, e := range acl {
		parts = append(parts, who(e)+" "+perms(e.Perms))
	}
	return strings.Join(parts, ", ")
}

// perms spells permissions as zkCli does: cdrwa.
func perms(p int32) string {
	var b strings.Builder
	for _, f := range []struct {
		bit  int32
		char byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&f.bit != 0 {
			b.WriteByte(f.char)
		}
	}
	return b.String()
}
