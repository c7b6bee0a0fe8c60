package service

import "time"

// Config tunes the purchase, for every strategy; a setting of one
// strategy alone is in that strategy's own config (AllotConfig).
type Config struct {
	// Pause, if set, is how long a purchase sleeps between reading and
	// writing the stock: the seed's race amplifier, the demo's random sleep
	// (the batch strategy sleeps once per batch). Nil: no sleep.
	Pause func() time.Duration
	// AcquireTimeout bounds the wait for the lock. Default
	// DefaultAcquireTimeout.
	AcquireTimeout time.Duration
	// UnlockTimeout bounds the release of the lock. Default
	// DefaultUnlockTimeout.
	UnlockTimeout time.Duration
	// OutcomeTimeout bounds how long a purchase whose commit was cut off
	// keeps asking the database whether its order exists. Default 10s.
	OutcomeTimeout time.Duration
	// SaleTimeout bounds a sale under the lock in the database (the seed's
	// one buyer, a batch's many), from the claim of its rows until its
	// COMMIT is sent (the COMMIT has a bound of the store's own). A holder
	// cut off from a database that stops answering would otherwise keep the
	// goods' lock, and every buyer behind it waiting: a batch for good (it
	// outlives its buyers' requests), the seed for as long as its buyer's
	// request lasts. Its buyers hear ErrUnavailable: nothing was
	// committed. Default DefaultSaleTimeout.
	SaleTimeout time.Duration
	// MaxWaiting bounds the purchases in progress in this instance (for the
	// locking strategies: the buyers waiting for the lock); a buyer beyond
	// it is answered ErrBusy at once. Default DefaultMaxWaiting; negative:
	// no bound.
	MaxWaiting int
	// QueueTarget is how long a buyer let in should wait at most: the
	// purchases in progress are bounded by the instance's measured service
	// rate times QueueTarget (and by MaxWaiting), a buyer beyond that bound
	// is answered ErrBusy at once (see admission). Default
	// DefaultQueueTarget; negative: MaxWaiting alone.
	QueueTarget time.Duration
	// BatchMax bounds the buyers one batch sells to, for both strategies
	// that sell in batches (batch, allot). Default DefaultBatchMax.
	BatchMax int
	// OnePerBuyer: a buyer who gives an id holds at most one order of a
	// goods that is not expired (enforced by the database).
	OnePerBuyer bool
	// WindowFor is how long a goods' sale window, read from the database,
	// is trusted before it is read again: a changed window shows within
	// it. Default DefaultWindowFor.
	WindowFor time.Duration
	// KnownFor is how long an instance answers a buyer's order (a retry
	// of a request id that bought, a buyer holding an order of the goods)
	// from what it learnt, without the admission, the lock or the
	// database. Default DefaultKnownFor; negative: never.
	KnownFor time.Duration
	// ConflictRetries bounds how often a purchase that wrote nothing for a
	// conflict (ErrConflict) or a broken connection (ErrConnectionLost) is
	// tried again, after a short random wait, within the request's deadline.
	// Default DefaultConflictRetries; negative: never.
	ConflictRetries int
	// HandOffAfterCommit makes the locking strategies release the lock
	// only once the commit has answered, instead of during the commit. The
	// overlap is safe on one server, where the next holder's locking read
	// waits for this transaction's row lock; on a multi-primary cluster
	// (Galera) row locks are local to a node, so the next holder, on
	// another node, must start after the commit. The store says which.
	HandOffAfterCommit bool
	// Clock is the time the sale windows go by (nil: this machine's); the
	// shop's follows the database's (see Clock).
	Clock *Clock
}

// The defaults of Config's fields and of NewSoldOutMarks.
const (
	DefaultAcquireTimeout = 10 * time.Second
	DefaultUnlockTimeout  = 10 * time.Second
	// DefaultOutcomeTimeout: how long a purchase whose commit was cut off
	// may keep asking whether its order exists.
	DefaultOutcomeTimeout = 10 * time.Second
	// DefaultSaleTimeout: how long a sale under the lock may take in the
	// database before it is given up (rolled back, its buyers answered
	// unavailable).
	DefaultSaleTimeout = 10 * time.Second
	// DefaultSoldOutFor: how long a goods seen sold out is answered sold
	// out without asking the lock or the database; a restock shows after
	// at most this long.
	DefaultSoldOutFor = time.Second
	// DefaultMaxWaiting and DefaultQueueTarget: the admission's bounds
	// (docs/operations.md says how they were chosen).
	DefaultMaxWaiting      = 1000
	DefaultQueueTarget     = 300 * time.Millisecond
	DefaultBatchMax        = 100
	DefaultWindowFor       = time.Second
	DefaultConflictRetries = 5
)

// WithDefaults is c with each field left zero at its default: what the
// shop makes of c. The shop's settings default to the same (cmd/shop's
// TestTheSettingsDefaultsAreThePackages).
func (c Config) WithDefaults() Config {
	c.setDefaults()
	return c
}

func (c *Config) setDefaults() {
	if c.AcquireTimeout <= 0 {
		c.AcquireTimeout = DefaultAcquireTimeout
	}
	if c.KnownFor == 0 {
		c.KnownFor = DefaultKnownFor
	}
	if c.UnlockTimeout <= 0 {
		c.UnlockTimeout = DefaultUnlockTimeout
	}
	if c.OutcomeTimeout <= 0 {
		c.OutcomeTimeout = DefaultOutcomeTimeout
	}
	if c.SaleTimeout <= 0 {
		c.SaleTimeout = DefaultSaleTimeout
	}
	if c.BatchMax <= 0 {
		c.BatchMax = DefaultBatchMax
	}
	if c.WindowFor <= 0 {
		c.WindowFor = DefaultWindowFor
	}
	if c.ConflictRetries == 0 {
		c.ConflictRetries = DefaultConflictRetries
	}
	if c.MaxWaiting == 0 {
		c.MaxWaiting = DefaultMaxWaiting
	}
	if c.QueueTarget == 0 {
		c.QueueTarget = DefaultQueueTarget
	}
}
