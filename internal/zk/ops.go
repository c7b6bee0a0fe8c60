package zk

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/google/uuid"
)

type result[T any] struct {
	v   T
	err error
}

// call runs fn, a blocking go-zookeeper request, and returns early when ctx
// ends. The request still completes in the background; abandoned, if not nil,
// then gets its result, so that a node created for nobody can be deleted.
func call[T any](ctx context.Context, fn func() (T, error), abandoned func(T, error)) (T, error) {
	if ctx.Done() == nil {
		return fn()
	}
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	ch := make(chan result[T], 1)
	go func() {
		v, err := fn()
		ch <- result[T]{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if abandoned != nil {
			go func() {
				r := <-ch
				abandoned(r.v, r.err)
			}()
		}
		var zero T
		return zero, ctx.Err()
	}
}

// Retry runs op until it succeeds, fails with an error a retry cannot help,
// or the retry policy gives up.
func (c *Client) Retry(ctx context.Context, op func() error) error {
	for n := 0; ; n++ {
		err := op()
		if err == nil || !retryable(err) {
			return err
		}
		if berr := c.Backoff(ctx, n); berr != nil {
			return fmt.Errorf("%w (last error: %v)", berr, err)
		}
	}
}

// Backoff sleeps before retry n, or returns why it must not retry.
func (c *Client) Backoff(ctx context.Context, n int) error {
	d, ok := c.opts.Retry.sleep(n)
	if !ok {
		return fmt.Errorf("zk: gave up after %d retries: %w", n, gozk.ErrConnectionClosed)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.bg.Done():
		return ErrClosed
	}
}

// children lists p's children within ctx, retrying through connection
// loss.
func (c *Client) children(ctx context.Context, p string) ([]string, error) {
	var kids []string
	err := c.Retry(ctx, func() (err error) {
		kids, err = call(ctx, func() ([]string, error) {
			k, _, err := c.conn.Children(p)
			return k, err
		}, nil)
		return err
	})
	return kids, err
}

// Ping reads the root's stat once, within ctx: a readiness check that the
// server answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := call(ctx, func() (bool, error) {
		ok, _, err := c.conn.Exists("/")
		return ok, err
	}, nil)
	return err
}

// EnsurePath creates p and its missing ancestors as CONTAINER nodes, or
// PERSISTENT ones where the server has no containers (before 3.5), as
// Curator's creatingParentContainersIfNeeded does. An ancestor found
// existing may be an empty container that the server reaps before its
// child is made: the walk then starts again from the root, a bounded
// number of times.
func (c *Client) EnsurePath(ctx context.Context, p string) error {
	if p == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.makePath(ctx, parts); !errors.Is(err, gozk.ErrNoNode) {
			return err
		}
	}
	return err
}

func (c *Client) makePath(ctx context.Context, parts []string) error {
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		err := c.Retry(ctx, func() error {
			_, err := call(ctx, func() (string, error) { return c.createParent(cur) }, nil)
			return err
		})
		if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			return fmt.Errorf("zk: create %s: %w", cur, err)
		}
	}
	return nil
}

func (c *Client) createParent(p string) (string, error) {
	if !c.noContainersKnown() {
		s, err := c.conn.CreateContainer(p, nil, gozk.FlagContainer, c.acl)
		if err == nil || errors.Is(err, gozk.ErrNodeExists) || errors.Is(err, gozk.ErrNoNode) || retryable(err) {
			return s, err
		}
		c.mu.Lock()
		c.noContainers = true
		c.mu.Unlock()
		c.log.Info("zookeeper server has no container nodes; parents are created persistent", "err", err)
	}
	return c.conn.Create(p, nil, gozk.FlagPersistent, c.acl)
}

func (c *Client) noContainersKnown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noContainers
}

// DeleteNode deletes p now if it can; on connection loss it keeps trying in
// the background (Curator's guaranteed delete) until the node is gone, the
// session that owns it is gone, or the client closes. A missing node is success.
func (c *Client) DeleteNode(p string, owner *Session) error {
	err := c.conn.Delete(p, -1)
	switch {
	case err == nil || errors.Is(err, gozk.ErrNoNode):
		owner.deleted(p)
		return nil
	case !retryable(err):
		return fmt.Errorf("zk: delete %s: %w", p, err)
	}
	c.Background(func(ctx context.Context) {
		for n := 0; ; n++ {
			select {
			case <-owner.Done():
				return // an ephemeral node dies with its session
			default:
			}
			err := c.conn.Delete(p, -1)
			if err == nil || errors.Is(err, gozk.ErrNoNode) {
				owner.deleted(p)
				return
			}
			if !retryable(err) {
				c.log.Warn("guaranteed delete failed", "path", p, "err", err)
				return
			}
			if c.SleepOrStop(ctx, owner.Done(), n) {
				return
			}
		}
	})
	return nil
}

// SleepOrStop waits before a background retry; true means stop.
func (c *Client) SleepOrStop(ctx context.Context, stop <-chan struct{}, n int) bool {
	d, _ := c.opts.Retry.sleep(min(n, c.opts.Retry.MaxRetries-1)) // background work never gives up
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-stop:
		return true
	case <-ctx.Done():
		return true
	}
}

// Background runs fn on a goroutine that Close waits for; fn's context ends
// when the client closes. It reports false, and runs nothing, once the
// client is closed.
func (c *Client) Background(fn func(ctx context.Context)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn(c.bg)
	}()
	return true
}

// Release deletes a held node whatever ctx does: the delete is started on a
// goroutine of the client's and waited for until ctx ends, after which it
// goes on alone (and deleteNode itself retries through connection loss).
// A closed client deletes nothing: its session, and the node, are gone.
func (c *Client) Release(ctx context.Context, node string, owner *Session) error {
	if ctx.Done() == nil {
		return c.DeleteNode(node, owner) // a context that never ends: no goroutine needed
	}
	done := make(chan error, 1)
	if !c.Background(func(context.Context) { done <- c.DeleteNode(node, owner) }) {
		return nil
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return nil // the delete goes on in the background
	}
}

// protectedPrefix is Curator's protection: "_c_" + a canonical UUID + "-".
func protectedPrefix() string { return "_c_" + uuid.NewString() + "-" }

// CreateProtected creates an EPHEMERAL_SEQUENTIAL node named
// <parent>/_c_<uuid>-<marker><seq> in session s, creating missing parents.
// When the connection drops during the create, the node may exist without
// our knowing its name: it is found again by its protected prefix, and
// rejected if a different session owns it. A node that may have been created
// for a caller who gave up is deleted in the background.
func (c *Client) CreateProtected(ctx context.Context, s *Session, parent, marker string, data []byte) (string, error) {
	prefix := protectedPrefix()
	want := path.Join(parent, prefix+marker)
	orphanCheck := func() { c.deleteProtectedOrphans(parent, prefix, s) }
	// The server reaps an empty container parent on its own schedule, also
	// between the create that made it and the node's: the parents are made
	// again then, a bounded number of times.
	const maxParentMakes = 3
	parentMakes := 0
	for n := 0; ; {
		created, err := call(ctx, func() (string, error) {
			return c.conn.Create(want, data, gozk.FlagEphemeralSequential, c.acl)
		}, func(p string, err error) {
			if err == nil {
				_ = c.DeleteNode(p, s) // nobody waits for the answer; failures are logged there
			}
		})
		switch {
		case err == nil:
			c.created(s, created)
			return created, nil
		case errors.Is(err, gozk.ErrNoNode) && parentMakes < maxParentMakes:
			if err := c.EnsurePath(ctx, parent); err != nil {
				return "", err
			}
			parentMakes++
			continue
		case ctx.Err() != nil:
			return "", ctx.Err()
		case errors.Is(err, gozk.ErrSessionExpired):
			return "", ErrSessionLost
		case !retryable(err):
			return "", fmt.Errorf("zk: create %s: %w", want, err)
		}
		// Connection loss: the create may have been applied.
		cur, err := c.Session(ctx)
		if err != nil {
			orphanCheck()
			return "", err
		}
		if cur != s {
			// The ephemeral node, if any, died with the session, unless the
			// server kept it and the client resumes it (resume.go).
			orphanCheck()
			return "", ErrSessionLost
		}
		found, err := c.findProtected(ctx, parent, prefix, s)
		if err != nil {
			orphanCheck()
			return "", err
		}
		if found != "" {
			c.created(s, found)
			return found, nil
		}
		if err := c.Backoff(ctx, n); err != nil {
			orphanCheck()
			return "", err
		}
		n++
	}
}

// findProtected looks for our node by its prefix among parent's children and
// accepts it only if session s owns it.
func (c *Client) findProtected(ctx context.Context, parent, prefix string, s *Session) (string, error) {
	kids, err := c.children(ctx, parent)
	if errors.Is(err, gozk.ErrNoNode) {
		// No parent, so no node: the lost answer was the create's NoNode
		// (a first create before the parents exist). Create again.
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		p := path.Join(parent, k)
		_, stat, err := c.conn.Exists(p)
		if err != nil {
			return "", err
		}
		if stat.EphemeralOwner != s.id {
			_ = c.DeleteNode(p, s) // not ours to keep; best effort, logged inside
			return "", nil
		}
		return p, nil
	}
	return "", nil
}

// deleteProtectedOrphans deletes, in the background, any node under parent
// whose name starts with prefix: the trace of a create whose answer was lost.
// Until that is done, s remembers it (resume.go).
func (c *Client) deleteProtectedOrphans(parent, prefix string, s *Session) {
	pc := protectedCreate{parent, prefix}
	if next := s.lookFor(pc); next != nil {
		s = next // lost and resumed already: the node, if any, is the new session's to delete
	}
	c.Background(func(ctx context.Context) {
		for n := 0; ; n++ {
			select {
			case <-s.Done():
				return
			default:
			}
			kids, _, err := c.conn.Children(parent)
			if err == nil {
				for _, k := range kids {
					if strings.HasPrefix(k, prefix) {
						_ = c.DeleteNode(path.Join(parent, k), s) // retried in the background itself
					}
				}
				s.lookedFor(pc)
				return
			}
			if errors.Is(err, gozk.ErrNoNode) || !retryable(err) {
				s.lookedFor(pc)
				return
			}
			if c.SleepOrStop(ctx, s.Done(), n) {
				return
			}
		}
	})
}

// SetAndDelete writes data into setPath at version and deletes owner's node,
// in one atomic request (a multi): both or neither. It reports whether
// both were done; on a refusal (ErrBadVersion, ErrNoNode) or connection
// trouble neither may have been, and the caller deletes the node as it
// would alone (DeleteNode, Release).
func (c *Client) SetAndDelete(ctx context.Context, setPath string, data []byte, version int32, node string, owner *Session) bool {
	return c.multiDelete(ctx, node, owner, &gozk.SetDataRequest{Path: setPath, Data: data, Version: version})
}

// DeleteBoth deletes p at version and owner's node in one atomic request,
// as SetAndDelete writes and deletes.
func (c *Client) DeleteBoth(ctx context.Context, p string, version int32, node string, owner *Session) bool {
	return c.multiDelete(ctx, node, owner, &gozk.DeleteRequest{Path: p, Version: version})
}

// multiDelete sends op and the delete of owner's node as one multi.
func (c *Client) multiDelete(ctx context.Context, node string, owner *Session, op any) bool {
	_, err := call(ctx, func() ([]gozk.MultiResponse, error) {
		return c.conn.Multi(op, &gozk.DeleteRequest{Path: node, Version: -1})
	}, nil)
	if err != nil {
		return false
	}
	owner.deleted(node)
	return true
}
