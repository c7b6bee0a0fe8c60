package zk

import (
	"context"
	"log/slog"

	gozk "github.com/go-zookeeper/zk"
)

// What the server answers, as go-zookeeper types it: the recipes see these
// names and never go-zookeeper's package.
type (
	// Stat is a node's metadata (Czxid, Version, EphemeralOwner, …).
	Stat = gozk.Stat
	// Event is what a watch delivers.
	Event = gozk.Event
	// EventType says what happened to a watched node.
	EventType = gozk.EventType
	// ACL is one entry of a node's access control list.
	ACL = gozk.ACL
)

// Permissions of an ACL entry.
const (
	PermRead   = gozk.PermRead
	PermWrite  = gozk.PermWrite
	PermCreate = gozk.PermCreate
	PermDelete = gozk.PermDelete
	PermAdmin  = gozk.PermAdmin
	PermAll    = gozk.PermAll
)

// ContainerOwner is the ephemeralOwner ZooKeeper gives a container node.
const ContainerOwner = int64(-1 << 63)

// Event types the recipes tell apart.
const (
	EventNodeDeleted         = gozk.EventNodeDeleted
	EventNodeDataChanged     = gozk.EventNodeDataChanged
	EventNodeChildrenChanged = gozk.EventNodeChildrenChanged
	EventNotWatching         = gozk.EventNotWatching
)

// The server's refusals the recipes act on (errors.Is).
var (
	ErrNoNode     = gozk.ErrNoNode
	ErrNodeExists = gozk.ErrNodeExists
	ErrBadVersion = gozk.ErrBadVersion
	ErrNoAuth     = gozk.ErrNoAuth
	ErrNotEmpty   = gozk.ErrNotEmpty
)

// The single requests. Each is sent once and answered within ctx: when ctx
// ends first the call returns ctx's error and the request completes on its
// own. Wrap one in Retry to try again through connection loss. (EnsurePath,
// CreateProtected, DeleteNode and Release retry by themselves.)

// Get reads p's data and stat.
func (c *Client) Get(ctx context.Context, p string) ([]byte, *Stat, error) {
	r, err := call(ctx, func() (read, error) {
		d, st, err := c.conn.Get(p)
		return read{data: d, stat: st}, err
	}, nil)
	return r.data, r.stat, err
}

// GetW reads p's data and stat and sets a data watch on it.
func (c *Client) GetW(ctx context.Context, p string) ([]byte, *Stat, <-chan Event, error) {
	r, err := call(ctx, func() (read, error) {
		d, st, ch, err := c.conn.GetW(p)
		return read{data: d, stat: st, watch: ch}, err
	}, nil)
	return r.data, r.stat, r.watch, err
}

// Children lists p's children (ErrNoNode when p does not exist).
func (c *Client) Children(ctx context.Context, p string) ([]string, error) {
	return call(ctx, func() ([]string, error) {
		kids, _, err := c.conn.Children(p)
		return kids, err
	}, nil)
}

// ChildrenW lists p's children and sets a child watch on it.
func (c *Client) ChildrenW(ctx context.Context, p string) ([]string, <-chan Event, error) {
	r, err := call(ctx, func() (read, error) {
		kids, _, ch, err := c.conn.ChildrenW(p)
		return read{kids: kids, watch: ch}, err
	}, nil)
	return r.kids, r.watch, err
}

// Exists reports whether p exists, with its stat when it does.
func (c *Client) Exists(ctx context.Context, p string) (bool, *Stat, error) {
	r, err := call(ctx, func() (read, error) {
		ok, st, err := c.conn.Exists(p)
		return read{exists: ok, stat: st}, err
	}, nil)
	return r.exists, r.stat, err
}

// Set writes p's data if its version is version (-1: any version).
func (c *Client) Set(ctx context.Context, p string, data []byte, version int32) (*Stat, error) {
	return call(ctx, func() (*Stat, error) { return c.conn.Set(p, data, version) }, nil)
}

// CreatePersistent creates the persistent node p with data (its parent must
// exist).
func (c *Client) CreatePersistent(ctx context.Context, p string, data []byte) (string, error) {
	return call(ctx, func() (string, error) { return c.conn.Create(p, data, gozk.FlagPersistent, c.acl) }, nil)
}

// GetACL reads p's ACL and stat.
func (c *Client) GetACL(ctx context.Context, p string) ([]ACL, *Stat, error) {
	r, err := call(ctx, func() (aclRead, error) {
		acl, st, err := c.conn.GetACL(p)
		return aclRead{acl, st}, err
	}, nil)
	return r.acl, r.stat, err
}

// Delete deletes p if its version is version (-1: any), once.
func (c *Client) Delete(ctx context.Context, p string, version int32) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, c.conn.Delete(p, version) }, nil)
	return err
}

type aclRead struct {
	acl  []ACL
	stat *Stat
}

// SessionID is the id of the connection's current session (0 before the
// first), the ephemeralOwner of the nodes it creates.
func (c *Client) SessionID() int64 { return c.conn.SessionID() }

// Logger is the client's logger (Options.Logger).
func (c *Client) Logger() *slog.Logger { return c.log }

// read is one answer of the reads above.
type read struct {
	data   []byte
	stat   *Stat
	kids   []string
	watch  <-chan Event
	exists bool
}
