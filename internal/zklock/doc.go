// Package zklock implements Apache Curator's lock recipes on ZooKeeper in Go,
// node-for-node compatible with Java Curator so that Go and Java processes can
// queue on the same lock path.
//
// The recipes are built on internal/zk, which owns the ZooKeeper
// connection: it reports connection state (connected, suspended,
// reconnected, lost) to listeners and hands out the current zk.Session,
// whose Done channel closes when the session is lost. A [Client] is the
// recipes' view of a zk.Client ([New]); recipes take it as their first
// argument and every blocking call takes a context first.
//
// [Mutex] is Curator's InterProcessMutex: a fair, reentrant lock built from
// EPHEMERAL_SEQUENTIAL nodes named "_c_<uuid>-lock-<seq>" under the lock path,
// where each waiter watches only its predecessor. A held Mutex reports through
// [Mutex.Lost] the moment it can no longer be sure it holds the lock: the
// connection was suspended, the session was lost, or its node was deleted.
// Work guarded by the lock must stop before it commits when Lost fires; even
// then a holder that pauses between its last check and its write can act after
// losing the lock, which only a fencing token checked by the storage prevents:
// [Mutex.Token] is the lock node's create zxid, which grows from holder to
// holder for the ensemble's lifetime (also [SemaphoreMutex.Token] and
// [Lease.Token]).
//
// Loss follows one rule. A held thing — a [Mutex]'s hold (and so each lock
// of a [ReadWriteLock]), a [SemaphoreMutex], a [Lease] — is lost when the
// connection is suspended, the session is lost, the client is closed, or its
// node is deleted by anyone but its own release; its Lost channel closes
// then, once, and stays closed (a hold does not come back after a
// reconnect: acquire again). Its holder must still release it. The
// elections follow the same events: a [LeaderLatch] stops leading (its
// [LatchListener] hears NotLeader) and re-contends on reconnect; a
// [LeaderSelector] cancels its term's context. Below them, the zk.Client
// reports the connection's states to listeners (its Listen), and a
// zk.Session's Done closes when that session is lost.
//
// Reentrancy is per Mutex handle, not per goroutine (Go has no thread
// identity): Acquire on a handle that already holds the lock only increments a
// count. Give each goroutine of control its own handle; handles are cheap.
//
// Hand-offs between handles of one Client are cheaper than Curator's: a
// waiter woken by the deletion of its predecessor lists the queue again only
// when it cannot know that the predecessor had been first in line. For a
// predecessor created in the same session it knows: a node that was first
// can never have a node queued ahead of it again, so its deletion leaves the
// waiter first (see [Stats]). The nodes on the wire are Curator's either way.
package zklock
