package service

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// The waiting room: first come, first served past capacity. A buyer the
// shop cannot let in now gets a place (place.go): its arrival time (when
// the shop read its request), signed, carried by the buyer. A buyer whose
// turn is due within RoomConfig.Hold waits for it at the door, in its own
// request (door.go): the door lets buyers into the admission in place
// order as purchases end, so the instance never idles while a place waits
// there, and a client that would come back a whole second later
// (Retry-After) loses nothing to the return. A buyer whose turn is further
// off is sent away with its place, told how many are ahead, how long that
// should take and when to come back; it waits at the door when it does.
// Across instances, a goods' horizon, shared in the store (room_horizon),
// is the arrival time up to which sent-away places may go in; a place
// beyond it is told to come back. Each instance moves the horizon forward, never back, at the rate it
// sells (roomsync.go): every tick it counts its own places beyond the
// horizon (a balancer spreads arrivals evenly, so an instance's share of
// them is its share of the sale) and lets in as many as it serves in
// roomLetIn, less those it let in within the pipeline (RoomPipeline) and
// those waiting at its door. A buyer whose turn has come and who finds the
// admission full waits at the door in place order (turn.go). New buyers go
// straight in only while nobody waits (the horizon has reached the latest
// place any instance gave). A buyer whose place is beyond what is left to
// sell (the stock and the unpaid orders that may expire) hears sold out at
// once. Before a goods' sale starts, places are a pre-queue, ordered at
// the start by arrival or shuffled (RoomConfig.Shuffle).

// RoomConfig is the waiting room's settings (room.*).
type RoomConfig struct {
	// Enabled: past capacity a buyer gets a place instead of 503 busy.
	Enabled bool
	// Keep is how long a place is kept when its buyer does not come back
	// after the time it was told. Default DefaultRoomKeep.
	Keep time.Duration
	// Shuffle orders the places given before a goods' sale starts at
	// random at the start, instead of by arrival.
	Shuffle bool
	// Hold is how long a buyer past capacity may wait at the door in its
	// own request (within its deadline) rather than be sent away to come
	// back: one whose turn is due within it waits. Default DefaultRoomHold;
	// negative: every such buyer is sent away.
	Hold time.Duration
	// PlacesPerClient bounds the places of one goods one client address
	// holds at an instance (roomheld.go); past it a new buyer of that
	// address hears ErrBusy. 0: no bound.
	PlacesPerClient int
}

// DefaultRoomKeep: a buyer who stops coming back loses its place after
// this long past the time it was told.
const DefaultRoomKeep = 10 * time.Second

// DefaultRoomHold: a buyer whose turn is due within this long waits for it
// in its request. It is below the 60 s a reverse proxy waits for an answer
// by default (nginx's proxy_read_timeout, an AWS load balancer's idle
// timeout) and k6's request timeout. A shorter hold sends more buyers
// away, and each comes back a whole second or more later (Retry-After),
// while later places that are there go in before it: a sale that takes
// longer than the hold is no longer first come, first served.
const DefaultRoomHold = 45 * time.Second

const (
	// roomTick is how often an instance reads the horizons and moves them.
	roomTick = 50 * time.Millisecond
	// RoomPipeline is the time from letting a place in to the buyer's
	// return: what the horizon keeps ahead of the sale, in buyers.
	RoomPipeline = time.Second
	// roomLetIn is how much of the sale the places let in and not yet
	// served may be: what this instance serves in that long. Below the
	// time a buyer waits at the door (roomTurnWait), so that those let in
	// seldom wait it out and are sent away again.
	roomLetIn = 500 * time.Millisecond
	// roomBucket is the resolution of the arrival histogram.
	roomBucket = 10 * time.Millisecond
	// roomMaxBuckets bounds one goods' histogram: arrivals later than
	// that many buckets past the horizon share the last one.
	roomMaxBuckets = 1 << 16
	// roomIdle: a goods nobody asked for this long leaves the room's memory.
	roomIdle = 30 * time.Second
	// roomForget: a goods' shared room whose every place was let in, the
	// latest given this long ago, is deleted (checked every
	// roomForgetEvery): no instance remembers it (roomIdle), and a new
	// queue starts as if it had never had one. The table then holds the
	// goods with queues open or lately closed, which each tick reads.
	roomForget      = 10 * time.Minute
	roomForgetEvery = time.Minute
	// roomTurnRetry is when a buyer whose turn has come but found the
	// admission full (after roomTurnWait) comes back.
	roomTurnRetry = 250 * time.Millisecond
	// roomLeftEvery is how often what is left of a goods with buyers
	// waiting is read.
	roomLeftEvery = 250 * time.Millisecond
	// roomLeftTrust is how long a reading of what is left may refuse a
	// place as sold out: what an idle queue read at the end of one sale is
	// not what a restock made of it. Past it, the place waits (its queue
	// has buyers again, so the next tick reads the goods anew).
	roomLeftTrust = 2*roomLeftEvery + roomTick
	// roomEndRetry bounds the wait told to a place near the sale's end: a
	// client's jitter (a tenth) and the answer's way still within a second.
	roomEndRetry = 750 * time.Millisecond
	// roomTurnWait is how long such a buyer waits in its request for a
	// place in the admission (and at most until its request's deadline):
	// its turn has come, so its wait is the purchase's, as a wait for the
	// lock is.
	roomTurnWait = 5 * time.Second
	// roomSoldOutMargin: a place hears sold out early only when the
	// buyers ahead of it exceed what is left by this factor (the count
	// ahead is an estimate).
	roomSoldOutMargin = 1.05
)

// RoomStore is what the room needs of the store: the key places are
// signed with, the shared horizons, and the instances sharing the room.
type RoomStore interface {
	// RoomKey returns the room's key, storing fresh if there is none yet.
	RoomKey(ctx context.Context, fresh []byte) ([]byte, error)
	// Horizons reads the rooms of goods, and of every goods whose queue
	// is open (its latest place beyond its horizon): how an instance
	// learns that another gave places; a goods without a room is missing.
	Horizons(ctx context.Context, goods []int32) (map[int32]RoomMark, error)
	// AdvanceRoom moves a goods' horizon and latest place to m's, each
	// only if that is later.
	AdvanceRoom(ctx context.Context, goodsNo int32, m RoomMark) error
	// RoomMembers records member as serving the room now and counts the
	// members seen within the last within.
	RoomMembers(ctx context.Context, member string, within time.Duration) (int, error)
	// ForgetRooms deletes the rooms whose every place was let in (latest
	// at or before the horizon) and whose latest place is before before.
	ForgetRooms(ctx context.Context, before int64) (int64, error)
}

// RoomMark is a goods' room as the instances share it, in microseconds
// since 1970: the horizon (places at or before it go in) and the latest
// place any instance gave (the queue is empty once the horizon reaches it).
type RoomMark struct{ Horizon, Latest int64 }

// ErrQueued: the buyer has a place in the goods' waiting room and is to
// come back; a QueuedError says where it stands.
var ErrQueued = errors.New("service: waiting for a turn")

// QueuedError is ErrQueued with the buyer's place.
type QueuedError struct {
	Token      string        // the place, for the buyer to send back
	Ahead      int           // buyers ahead of it (an estimate)
	Wait       time.Duration // the expected wait
	RetryAfter time.Duration // when to come back
	StartsAt   *time.Time    // the sale's start, for a place in the pre-queue
}

func (e *QueuedError) Error() string {
	return fmt.Sprintf("%v: %d ahead, about %v", ErrQueued, e.Ahead, e.Wait.Round(time.Millisecond))
}

func (e *QueuedError) Unwrap() error { return ErrQueued }

// SoldOutAheadError is ErrSoldOut told before the buyer's turn: the buyers
// ahead of its place (Ahead, an estimate) are more than what is left. It
// is a forecast, not a read of the stock: nothing was sold to the buyer,
// and the pieces left go to the places ahead.
type SoldOutAheadError struct{ Ahead int }

func (e *SoldOutAheadError) Error() string {
	return fmt.Sprintf("%v: %d buyers ahead, more than is left", ErrSoldOut, e.Ahead)
}

func (e *SoldOutAheadError) Unwrap() error { return ErrSoldOut }

// Room is the waiting room of an instance; Run keeps it in step with the
// other instances'.
type Room struct {
	cfg    RoomConfig
	store  RoomStore
	signer placeSigner
	log    *slog.Logger

	// Set by the Shop that uses the room: its admission (the local rate)
	// and its store (what is left of a goods).
	admission *admission
	shop      Store

	mu      sync.Mutex
	queues  map[int32]*roomQueue
	members int
	turns   turnWaiters // buyers waiting for the admission, by place
	// turnsOf counts turns by goods: asked on every purchase; doorLatest
	// is the latest place put at the door, by goods, while any waits.
	turnsOf    map[int32]int64
	doorLatest map[int32]int64
	held       heldPlaces    // the places given, by buyer (roomheld.go)
	poke       chan struct{} // a queue opened here: Run tells the others now
	// draining is closed by Drain: the instance is shutting down, and the
	// door holds nobody more.
	draining  chan struct{}
	drainOnce sync.Once
}

// Drain sends the buyers waiting at the door away with their places, and
// holds no new one: the instance is shutting down, and a buyer held for the
// hold would keep the shutdown waiting, or be cut off with no answer. Sent
// away, it comes back to another instance with its place.
func (r *Room) Drain() {
	if r == nil {
		return
	}
	r.drainOnce.Do(func() { close(r.draining) })
}

// roomQueue is one goods' room as this instance sees it.
type roomQueue struct {
	goodsNo  int32
	horizon  int64           // microseconds: places at or before it may go in
	latest   int64           // the latest place any instance gave (as read), or this one
	given    int64           // the latest place this instance gave
	hist     map[int64]int32 // the places this instance gave, by bucket of their effective time
	startsAt *time.Time      // the sale's start, while it is ahead
	asked    bool            // a buyer asked this instance for it (else it was learnt from the store)
	lastAsk  time.Time
	// blocked counts, per tick of the last second, buyers whose turn had
	// come and who found the admission full; passed, per tick of the last
	// pipeline, the places the horizon passed.
	blocked, passed ring
	snap            roomSnapshot
	left            int64     // stock and unpaid orders; -1: not read
	stock           int64     // the stock alone, as read at leftRead
	leftRead        time.Time // when the reading of left and stock began (zero: never read)
	leftAsked       time.Time // when a tick last asked for one
}

// roomSnapshot is a goods' places beyond the horizon, as of a tick: their
// buckets in order and the count up to each, for a buyer's count ahead.
type roomSnapshot struct {
	keys []int64
	cum  []int64
}

// ring counts per tick over a window of ticks.
type ring struct {
	n   []int64
	pos int
}

func newRing(ticks int) ring { return ring{n: make([]int64, ticks)} }
func (r *ring) add(k int64)  { r.n[r.pos] += k }
func (r *ring) next()        { r.pos = (r.pos + 1) % len(r.n); r.n[r.pos] = 0 }
func (r *ring) sum() (s int64) {
	for _, v := range r.n {
		s += v
	}
	return s
}

// NewRoom is an instance's room, with the store's key (made now if no
// instance made it).
func NewRoom(ctx context.Context, store RoomStore, cfg RoomConfig, log *slog.Logger) (*Room, error) {
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultRoomKeep
	}
	if cfg.Hold == 0 {
		cfg.Hold = DefaultRoomHold
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	key, err := store.RoomKey(ctx, fresh)
	if err != nil {
		return nil, fmt.Errorf("service: the waiting room's key: %w", err)
	}
	return &Room{cfg: cfg, store: store, signer: placeSigner{key: key}, log: log,
		queues: map[int32]*roomQueue{}, members: 1, held: newHeldPlaces(), poke: make(chan struct{}, 1), draining: make(chan struct{})}, nil
}

// attach gives the room the Shop's admission and store.
func (r *Room) attach(a *admission, shop Store) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.admission, r.shop = a, shop
}

// roomWho is whom a place is bound to: the buyer, or an anonymous buyer's
// own request id; for an anonymous buyer without one, the id its place
// carries or a new one (anonymousWho). (Named by its client address
// instead, every anonymous buyer behind one address would share a place
// and go in together at its turn: the overload and pre-queue tests showed
// it.)
func roomWho(p PurchaseRequest) string {
	switch {
	case p.UserID != "":
		return "u:" + p.UserID
	case p.ClientRequestID:
		return "r:" + p.RequestID
	}
	return anonymousWho(p.Place)
}

// arrivalOf is a buyer's position in its goods' order of arrival: its
// place's (effective) time when it came back with a valid place, else now,
// its request's arrival.
func (r *Room) arrivalOf(goodsNo int32, who, token string, startsAt *time.Time, now time.Time) time.Time {
	if token == "" {
		return now
	}
	pl, ok := r.signer.read(token, goodsNo, who, now)
	if !ok {
		return now
	}
	return time.UnixMicro(r.effective(pl, who, startsAt))
}

// effective is a place's position in its goods' order, in microseconds:
// its arrival, or for a place of the pre-queue with Shuffle a random point
// of the second before the start (the buyer's and the sale's hash, so the
// same at every instance).
func (r *Room) effective(pl Place, who string, startsAt *time.Time) int64 {
	if startsAt == nil || !r.cfg.Shuffle || !pl.At.Before(*startsAt) {
		return pl.At.UnixMicro()
	}
	h := fnv.New64a()
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(pl.GoodsNo))
	binary.BigEndian.PutUint64(b[4:], uint64(startsAt.UnixMicro()))
	h.Write(b[:])
	h.Write(r.signer.key) // not guessable: a buyer cannot pick an id that comes first
	h.Write([]byte(who))
	sec := time.Second.Microseconds()
	return startsAt.UnixMicro() - sec + int64(h.Sum64()%uint64(sec))
}

// queuedLocked is the answer to a buyer who waits at eff: its place renewed
// until it is due back plus Keep (and held for the buyer so long, for a
// request of its that comes without it), the count ahead, the wait; or
// ErrSoldOut when the count ahead is beyond what is left.
func (r *Room) queuedLocked(q *roomQueue, pl Place, who, client string, eff int64, now time.Time, turn bool) error {
	members := max(1, r.members)
	ahead := 0
	if !turn {
		ahead = int(q.snap.before(eff/roomBucket.Microseconds())+r.doorAheadLocked(q.goodsNo, eff)) * members
		if err := r.soldOutAheadLocked(q, eff, now); err != nil {
			return err
		}
	}
	rate := r.rateLocked() * float64(members)
	wait := time.Duration(float64(ahead) / rate * float64(time.Second))
	// A place whose count ahead reaches half the stock left now (as read,
	// less what the instances sold since at their rate), where the sale's
	// end decides, comes back at least every roomEndRetry: it should hear
	// sold out within the second of it; so does any while the stock is
	// not read yet (a queue's first moments). The others come back when
	// their turn is due.
	// A buyer sent away comes back while its turn is still a held wait
	// away (enter), not when it is due: then it waits at the door.
	retry := max(min(wait-roomTurnWait/2, 30*time.Second), roomTurnRetry)
	stockNow := q.stock - int64(rate*now.Sub(q.leftRead).Seconds())
	if q.left < 0 || 2*int64(ahead) >= stockNow {
		retry = max(min(wait, roomEndRetry), roomTurnRetry)
	}
	if turn {
		retry = roomTurnRetry
	}
	var starts *time.Time
	if q.startsAt != nil && now.Before(*q.startsAt) {
		until := q.startsAt.Sub(now)
		wait += until
		retry = max(retry, until)
		starts = q.startsAt
	}
	pl.Expires = now.Add(retry + r.cfg.Keep)
	r.held.give(who, client, pl, pl.Expires)
	return &QueuedError{Token: r.signer.sign(pl, who), Ahead: ahead, Wait: wait, RetryAfter: retry, StartsAt: starts}
}

// rateLocked is the purchases per second this instance serves: per second
// of work (admission.go says why not the admission's own rate), at least
// what it served while busy throughout.
func (r *Room) rateLocked() float64 {
	if r.admission == nil {
		return 100
	}
	st := r.admission.stats()
	if rate := max(st.WorkRate, st.Rate); rate > 0 {
		return rate
	}
	return max(float64(st.Limit)*3, 10) // not measured yet: its queue in a third of a second
}

func (r *Room) queueLocked(goodsNo int32, now time.Time) *roomQueue {
	q := r.queues[goodsNo]
	if q == nil {
		ticks := int(RoomPipeline / roomTick)
		q = &roomQueue{goodsNo: goodsNo, hist: map[int64]int32{}, blocked: newRing(int(time.Second / roomTick)), passed: newRing(ticks), left: -1}
		r.queues[goodsNo] = q
	}
	q.lastAsk = now
	return q
}

// emptyLocked: nobody waits for goods q, as far as this instance knows:
// the horizon has reached the latest place given, none of the places it
// let in within the pipeline is still to come back, none waits at the door.
func (r *Room) emptyLocked(q *roomQueue) bool {
	return q.horizon >= max(q.latest, q.given) && q.passed.sum() == 0 && q.blocked.sum() == 0 && r.turnsOfLocked(q.goodsNo) == 0
}

// waitingLocked is the places this instance gave that are beyond the
// horizon.
func (r *Room) waitingLocked(q *roomQueue) int64 {
	var n int64
	h := q.horizon / roomBucket.Microseconds()
	for k, c := range q.hist {
		if k > h {
			n += int64(c)
		}
	}
	return n
}

// before is the places of the snapshot in buckets before b.
func (s roomSnapshot) before(b int64) int64 {
	i, _ := slices.BinarySearch(s.keys, b)
	if i == 0 {
		return 0
	}
	return s.cum[i-1]
}
