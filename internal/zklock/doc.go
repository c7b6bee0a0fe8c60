// Package zklock implements Apache Curator's lock recipes on ZooKeeper in Go,
// node-for-node compatible with Java Curator so that Go and Java processes can
// queue on the same lock path.
//
// A [Client] owns the ZooKeeper connection. It reports connection state
// (connected, suspended, reconnected, lost) to listeners and hands out the
// current [Session], whose Done channel closes when the session is lost.
// Recipes take the client as their first argument and every blocking call
// takes a context first.
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
