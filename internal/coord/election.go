package coord

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// Election runs the order sweeper in the one instance that leads: a
// LeaderSelector (Curator's, on a Mutex at leader.path) whose term is the
// sweep loop. A term ends, and the sweeping with it, the moment the
// connection is suspended or the session lost; the selector queues again and
// another instance's term starts once ZooKeeper has dropped the old
// leader's node (at the latest when its session expires).
type Election struct {
	sel *zklock.LeaderSelector
	id  string
	log *slog.Logger
}

// StartElection joins the election at path as id; while this instance
// leads, it sweeps orders, and leading hears when that starts and ends.
func StartElection(c *zklock.Client, path, id string, orders *service.Orders, leading func(bool), log *slog.Logger) (*Election, error) {
	e := &Election{id: id, log: log}
	e.sel = zklock.NewLeaderSelector(c, path, id, func(ctx context.Context) error {
		log.Info("leading: this instance sweeps expired orders", "participantId", id, "path", path)
		leading(true)
		err := orders.Sweep(ctx, id)
		leading(false)
		log.Info("leadership ended", "participantId", id)
		return err
	})
	e.sel.AutoRequeue()
	if err := e.sel.Start(); err != nil {
		return nil, err
	}
	return e, nil
}

// Status is GET /leader's answer. A ZooKeeper that does not answer within
// ctx (or at all) is service.ErrUnavailable.
func (e *Election) Status(ctx context.Context) (bool, string, string, error) {
	ids, err := e.sel.Participants(ctx)
	if err != nil {
		return false, "", e.id, fmt.Errorf("%w: zookeeper: the election's participants: %w", service.ErrUnavailable, err)
	}
	leaderID := ""
	if len(ids) > 0 {
		leaderID = ids[0]
	}
	return e.sel.HasLeadership(), leaderID, e.id, nil
}

// Check is nil while this instance is queued in the election or leads it,
// and why not when it could not queue (readiness: an instance that cannot
// take part cannot take over the sweeping).
func (e *Election) Check(context.Context) error {
	since, err := e.sel.QueueError()
	if err == nil {
		return nil
	}
	return fmt.Errorf("leader election: could not queue for %s: %w", time.Since(since).Round(time.Second), err)
}

// Queued reports whether this instance is queued in the election or leads it.
func (e *Election) Queued() bool {
	_, err := e.sel.QueueError()
	return err == nil
}

// Participants is how many instances queue in the election, the leader
// among them.
func (e *Election) Participants(ctx context.Context) (int, error) {
	ids, err := e.sel.Participants(ctx)
	return len(ids), err
}

// Close leaves the election (a term in progress ends first).
func (e *Election) Close() { e.sel.Close() }

// NoElection is leader.enabled=false: every instance sweeps. That is safe
// (an order expires, and its piece returns, once however many sweep), only
// redundant.
type NoElection struct{ ID string }

// Status: this instance sweeps, as every other does.
func (n NoElection) Status(context.Context) (bool, string, string, error) {
	return true, n.ID, n.ID, nil
}

// ParticipantID is the instance's id in the election: leader.id, or the
// host name and the port it listens on.
func ParticipantID(configured string, addr net.Addr) string {
	if configured != "" {
		return configured
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	_, port, _ := net.SplitHostPort(addr.String())
	return net.JoinHostPort(host, port)
}
