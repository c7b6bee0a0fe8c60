package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRoomStore is the room's shared state in memory.
type fakeRoomStore struct {
	mu       sync.Mutex
	key      []byte
	horizons map[int32]RoomMark
}

func (f *fakeRoomStore) RoomKey(_ context.Context, fresh []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.key == nil {
		f.key = fresh
	}
	return f.key, nil
}

func (f *fakeRoomStore) Horizons(_ context.Context, goods []int32) (map[int32]RoomMark, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int32]RoomMark{}
	for _, g := range goods {
		if h, ok := f.horizons[g]; ok {
			out[g] = h
		}
	}
	for g, h := range f.horizons {
		if h.Latest > h.Horizon {
			out[g] = h
		}
	}
	return out, nil
}

func (f *fakeRoomStore) AdvanceRoom(_ context.Context, g int32, m RoomMark) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.horizons == nil {
		f.horizons = map[int32]RoomMark{}
	}
	old := f.horizons[g]
	f.horizons[g] = RoomMark{Horizon: max(old.Horizon, m.Horizon), Latest: max(old.Latest, m.Latest)}
	return nil
}

func (f *fakeRoomStore) RoomMembers(context.Context, string, time.Duration) (int, error) {
	return 1, nil
}

func (f *fakeRoomStore) ForgetRooms(_ context.Context, before int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for g, h := range f.horizons {
		if h.Latest <= h.Horizon && h.Latest < before {
			delete(f.horizons, g)
			n++
		}
	}
	return n, nil
}

// newTestRoom is a room on a fake store; unless cfg says otherwise, it
// holds nobody at the door (Hold -1), so that a buyer past capacity hears
// its place at once.
func newTestRoom(t *testing.T, cfg RoomConfig) (*Room, *fakeRoomStore) {
	t.Helper()
	if cfg.Hold == 0 {
		cfg.Hold = -1
	}
	store := &fakeRoomStore{}
	r, err := NewRoom(context.Background(), store, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, store
}

// A place is its buyer's, for its goods, until it lapses: another buyer,
// another goods, a token altered in any byte, a malformed one or a lapsed
// one is no place (its bearer is a new arrival).
func TestAPlaceCannotBeForgedMovedOrKeptPastItsTime(t *testing.T) {
	r, _ := newTestRoom(t, RoomConfig{})
	now := time.Now()
	pl := Place{GoodsNo: 1, At: now.Add(-time.Second).Truncate(time.Microsecond), Expires: now.Add(10 * time.Second)}
	token := r.signer.sign(pl, "u:alice")
	got, ok := r.signer.read(token, 1, "u:alice", now)
	if !ok || !got.At.Equal(pl.At) {
		t.Fatalf("alice's own place: %+v %t, want arrival %v", got, ok, pl.At)
	}
	other, _ := newTestRoom(t, RoomConfig{}) // another deployment's key
	for name, c := range map[string]struct {
		token, who string
		goods      int32
		at         time.Time
	}{
		"another buyer's":         {token, "u:mallory", 1, now},
		"for another goods":       {token, "u:alice", 2, now},
		"lapsed":                  {token, "u:alice", 1, now.Add(11 * time.Second)},
		"another key's":           {other.signer.sign(pl, "u:alice"), "u:alice", 1, now},
		"malformed":               {"p1.not base64!", "u:alice", 1, now},
		"empty":                   {"", "u:alice", 1, now},
		"of another version":      {"p2." + token[3:], "u:alice", 1, now},
		"too long":                {token + strings.Repeat("A", 64), "u:alice", 1, now},
		"an earlier arrival made": {forgeEarlier(token), "u:alice", 1, now},
	} {
		if p, ok := r.signer.read(c.token, c.goods, c.who, c.at); ok {
			t.Errorf("a place %s was read: %+v", name, p)
		}
	}
}

// forgeEarlier is token with its arrival moved a second earlier, its
// signature kept.
func forgeEarlier(token string) string {
	b := []byte(token)
	b[len("p1.")+8] ^= 0x01 // a byte of the arrival time
	return string(b)
}

// Past capacity a new buyer gets a place; a place beyond the horizon waits
// even with room in the admission; one at or before it goes in when there
// is room, and when there is none hears its turn has come (a short wait).
func TestPlacesGoInInOrderOfTheHorizon(t *testing.T) {
	r, store := newTestRoom(t, RoomConfig{})
	full := func() bool { return false }
	room := func() bool { return true }
	now := time.Now()
	enter := func(who, token string, at time.Time, admit func() bool) (bool, *QueuedError) {
		t.Helper()
		in, err := r.enter(context.Background(), 1, who, "", token, nil, at, nil, admit)
		var q *QueuedError
		if !in && !errors.As(err, &q) {
			t.Fatalf("%s: entered %t, %v; want a place", who, in, err)
		}
		return in, q
	}
	if in, _ := enter("u:first", "", now, room); !in {
		t.Fatal("the first buyer with nobody waiting did not go straight in")
	}
	_, a := enter("u:a", "", now.Add(time.Millisecond), full)
	_, b := enter("u:b", "", now.Add(20*time.Millisecond), full)
	if a.Token == "" || b.Token == "" || a.RetryAfter <= 0 {
		t.Fatalf("places %+v %+v: want tokens and a time to come back", a, b)
	}
	r.mu.Lock()
	r.queues[1].snap = r.queues[1].snapshot() // as a tick would, without moving the horizon
	r.mu.Unlock()
	if _, q := enter("u:b", b.Token, now.Add(40*time.Millisecond), room); q == nil || q.Ahead < 1 {
		t.Fatalf("b, behind a, came back before the horizon passed it: %+v, want queued with a ahead", q)
	}
	if in, q := enter("u:late", "", now.Add(41*time.Millisecond), room); in || q == nil {
		t.Fatal("a new buyer went in past the waiting ones")
	}
	// The horizon passes a's place but not b's: a goes in, b waits.
	store.horizons = map[int32]RoomMark{1: {Horizon: now.Add(5 * time.Millisecond).UnixMicro(), Latest: now.Add(20 * time.Millisecond).UnixMicro()}}
	r.tick(context.Background(), now.Add(50*time.Millisecond))
	if in, _ := enter("u:a", a.Token, now.Add(60*time.Millisecond), room); !in {
		t.Error("a, within the horizon, with room in the admission, did not go in")
	}
	if _, q := enter("u:a", a.Token, now.Add(61*time.Millisecond), full); q == nil || q.RetryAfter != roomTurnRetry || q.Ahead != 0 {
		t.Errorf("a, its turn come but the admission full: %+v, want told to come back in %v", q, roomTurnRetry)
	}
}

// The horizon moves as far as the instance can serve in the pipeline, less
// those it let in and those turned away for room: over the oldest places
// first, never back; to now once nobody waits.
func TestTheHorizonMovesAtTheRateTheShopServes(t *testing.T) {
	r, store := newTestRoom(t, RoomConfig{})
	r.attach(newAdmission(0, 4, time.Now()), nil) // limit 4, not measured: 12 a second
	now := time.Now()
	for i := range 40 { // 40 places, 10 ms apart
		r.enter(context.Background(), 1, "u:"+string(rune('a'+i)), "", "", nil, now.Add(time.Duration(i)*roomBucket), nil, func() bool { return false })
	}
	r.tick(context.Background(), now.Add(time.Second))
	want := int64(12 * roomLetIn.Seconds()) // 6 places
	h := store.horizons[1].Horizon
	passed := (h - now.UnixMicro()) / roomBucket.Microseconds()
	if passed < want-1 || passed > want+1 {
		t.Errorf("the horizon passed %d places, want about %d", passed, want)
	}
	r.tick(context.Background(), now.Add(time.Second+roomTick))
	if store.horizons[1].Horizon != h {
		t.Errorf("the horizon moved again before those let in came back: %d, was %d", store.horizons[1].Horizon, h)
	}
}

// A room fed by an instance whose busy windows' rate was measured slow at
// a cold start lets buyers in at what the instance serves per second of
// work: at the busy windows' rate (275/s) it let in 137 a second, the
// instance sold them in milliseconds and sat idle while 2 400 places
// waited (make bench-shop (k), batch with the room).
func TestTheRoomLetsInAtTheRateOfWork(t *testing.T) {
	r, store := newTestRoom(t, RoomConfig{})
	now := time.Now()
	a := newAdmission(300*time.Millisecond, 1000, now)
	coldThenTrickle(t, a, &now)
	r.attach(a, nil)
	for i := range 3000 { // 3000 places, a millisecond apart
		r.enter(context.Background(), 1, fmt.Sprintf("u:%d", i), "", "", nil, now.Add(time.Duration(i)*time.Millisecond), nil, func() bool { return false })
	}
	r.tick(context.Background(), now.Add(3*time.Second))
	passed := (store.horizons[1].Horizon - now.UnixMicro()) / time.Millisecond.Microseconds()
	if want := int64(2500 * roomLetIn.Seconds()); passed < want {
		t.Errorf("the horizon passed %d places in a tick, want at least %d (2500 purchases/s of work for %v); the admission says %+v", passed, want, roomLetIn, a.stats())
	}
}

// A queue opened at one instance is kept at the others: once they have
// read the store, their new buyers get places behind it instead of going
// straight in ahead of it. make bench-shop (k): one instance's admission
// filled at the cold start and gave places, the other's did not, let its
// new arrivals straight in and sold them the pieces while the first
// instance's places waited (84% of the pieces to the first arrivals).
func TestAQueueOpenedAtOneInstanceIsKeptAtTheOthers(t *testing.T) {
	a, store := newTestRoom(t, RoomConfig{})
	b, err := NewRoom(context.Background(), store, RoomConfig{Hold: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	in, err := b.enter(context.Background(), 1, "u:early", "", "", nil, now, nil, func() bool { return false })
	if in || !errors.Is(err, ErrQueued) {
		t.Fatalf("b, admission full: in %t, %v; want a place", in, err)
	}
	b.publish(context.Background())
	a.tick(context.Background(), now.Add(roomTick))
	in, err = a.enter(context.Background(), 1, "u:late", "", "", nil, now.Add(2*roomTick), nil, func() bool { return true })
	if in || !errors.Is(err, ErrQueued) {
		t.Errorf("a later buyer at a, its admission free: in %t, %v; want a place behind b's", in, err)
	}
	// Another goods, with no queue anywhere, goes straight in.
	if in, err := a.enter(context.Background(), 2, "u:other", "", "", nil, now.Add(2*roomTick), nil, func() bool { return true }); !in || err != nil {
		t.Errorf("goods 2, no queue: in %t, %v; want straight in", in, err)
	}
}

// Before the start, places are a pre-queue: none goes in, each is told to
// come back at the start; with Shuffle their order is a function of the
// buyer (the same at every instance), not of their arrival, and falls in
// the second before the start.
func TestThePreQueueIsShuffledAtTheStart(t *testing.T) {
	r, _ := newTestRoom(t, RoomConfig{Shuffle: true})
	start := time.Now().Add(time.Minute)
	now := time.Now()
	in, err := r.enter(context.Background(), 1, "u:early", "", "", &start, now, nil, func() bool { return true })
	var q *QueuedError
	if in || !errors.As(err, &q) || q.StartsAt == nil || q.RetryAfter < 59*time.Second {
		t.Fatalf("a buyer before the start: in %t, %+v; want a place and to come back at the start", in, err)
	}
	inOrder := 0
	prev := int64(0)
	for i := range 100 {
		pl := Place{GoodsNo: 1, At: now.Add(time.Duration(i) * time.Millisecond)}
		eff := r.effective(pl, "u:"+strings.Repeat("x", i), &start)
		if eff < start.Add(-time.Second).UnixMicro() || eff >= start.UnixMicro() {
			t.Fatalf("a pre-queue place at %d, outside the second before the start", eff)
		}
		if eff > prev {
			inOrder++
		}
		prev = eff
		if again := r.effective(pl, "u:"+strings.Repeat("x", i), &start); again != eff {
			t.Fatal("a place's shuffled position is not the same twice")
		}
	}
	if inOrder > 80 {
		t.Errorf("%d of 100 pre-queue places kept their arrival order: not shuffled", inOrder)
	}
	byArrival, _ := newTestRoom(t, RoomConfig{Shuffle: false})
	pl := Place{GoodsNo: 1, At: now}
	if eff := byArrival.effective(pl, "u:x", &start); eff != now.UnixMicro() {
		t.Errorf("without Shuffle a pre-queue place is at %d, want its arrival %d", eff, now.UnixMicro())
	}
}

// A place whose buyers ahead are well beyond what is left hears sold out
// at once, not after its wait.
func TestAPlaceBeyondWhatIsLeftIsToldSoldOut(t *testing.T) {
	r, now, last := hundredPlaces(t, "y")
	full := func() bool { return false }
	r.mu.Lock()
	r.queues[1].left = 10 // ten pieces (stock and unpaid) left, as read at the tick
	r.queues[1].leftRead = now.Add(time.Second)
	r.mu.Unlock()
	if _, err := r.enter(context.Background(), 1, "u:"+strings.Repeat("y", 100), "", last.Token, nil, now.Add(time.Second), nil, full); !errors.Is(err, ErrSoldOut) {
		t.Errorf("the 100th place with 10 pieces left: %v, want sold out", err)
	}
}

// hundredPlaces is a room serving 10 a second (the horizon passes 15
// places a tick) where 100 buyers (named by repeats of c) took places of
// goods 1 a bucket apart from now, and a tick a second later; last is the
// 100th buyer's place.
func hundredPlaces(t *testing.T, c string) (r *Room, now time.Time, last *QueuedError) {
	t.Helper()
	r, _ = newTestRoom(t, RoomConfig{})
	r.attach(newAdmission(0, 1, time.Now()), nil)
	now = time.Now()
	full := func() bool { return false }
	for i := range 100 {
		_, err := r.enter(context.Background(), 1, "u:"+strings.Repeat(c, i+1), "", "", nil, now.Add(time.Duration(i)*roomBucket), nil, full)
		errors.As(err, &last)
	}
	r.tick(context.Background(), now.Add(time.Second))
	return r, now, last
}

// What is left of a goods refuses places only while its reading is fresh:
// a queue's reading from the end of a sale (0 left) refused every buyer of
// a restock as sold out, 1 497 of 1 500 right after stock set, until a
// tick read the goods again. Read long ago, the place waits instead.
func TestAStaleReadingOfWhatIsLeftRefusesNobody(t *testing.T) {
	r, now, last := hundredPlaces(t, "z")
	full := func() bool { return false }
	r.mu.Lock()
	r.queues[1].left = 0                              // the sale before the restock sold out
	r.queues[1].leftRead = now.Add(-10 * time.Second) // read then; restocked since
	r.mu.Unlock()
	_, err := r.enter(context.Background(), 1, "u:"+strings.Repeat("z", 100), "", last.Token, nil, now.Add(time.Second), nil, full)
	if errors.Is(err, ErrSoldOut) {
		t.Fatalf("a place refused sold out by a reading 10 s old: %v", err)
	}
	if !errors.As(err, &last) {
		t.Fatalf("the place: %v, want it to wait in the queue", err)
	}
}

// A reading of what is left counts from when it was read, not from when a
// tick asked for it: between the two (the query's time, or a query that
// failed) the last reading, from before a restock, refused a crowd's first
// buyers as sold out as if it were fresh.
func TestAReadingIsAsOldAsItIs(t *testing.T) {
	r, now, last := hundredPlaces(t, "v") // the tick asked for a reading; none came (no store)
	r.mu.Lock()
	r.queues[1].left = 0 // what the last reading, long ago, said
	r.mu.Unlock()
	full := func() bool { return false }
	if _, err := r.enter(context.Background(), 1, "u:"+strings.Repeat("v", 100), "", last.Token, nil, now.Add(time.Second), nil, full); errors.Is(err, ErrSoldOut) {
		t.Fatalf("a place refused by a reading asked for but not made: %v", err)
	}
}

// A goods found with nothing left lets every place given so far go: a
// restock's crowd queued behind the places of the crowd that had emptied
// the stock (1 758 of them, long gone, told sold out) and every buyer of
// it heard sold out, stock 100 untouched.
func TestASoldOutGoodsKeepsNoPlacesAhead(t *testing.T) {
	r, now, _ := hundredPlaces(t, "w")
	r.mu.Lock()
	r.queues[1].left = 0 // sold out, as read at the last tick
	r.queues[1].leftRead = now.Add(time.Second)
	r.mu.Unlock()
	r.tick(context.Background(), now.Add(time.Second+roomTick))
	r.mu.Lock()
	r.queues[1].left = 100 // restocked, as read by the next
	r.queues[1].leftRead = now.Add(time.Second + roomTick)
	r.mu.Unlock()
	full := func() bool { return false }
	_, err := r.enter(context.Background(), 1, "u:late", "", "", nil, now.Add(time.Second+2*roomTick), nil, full)
	var q *QueuedError
	switch {
	case errors.Is(err, ErrSoldOut):
		t.Fatalf("a buyer after the restock: %v; the sold-out crowd's places still stand ahead", err)
	case errors.As(err, &q) && q.Ahead > 0:
		t.Fatalf("a buyer after the restock has %d ahead, want none", q.Ahead)
	}
}

// The places an instance keeps are bounded by time, not by buyers: it
// counts them per 10 ms of arrival, so a flood of made-up buyers (each a
// new arrival) costs a bucket per 10 ms, whatever their number; they
// queue behind every earlier place, never before it; and arrivals past
// roomMaxBuckets beyond the horizon share the last bucket.
func TestThePlacesKeptAreBoundedByTime(t *testing.T) {
	r, _ := newTestRoom(t, RoomConfig{})
	now := time.Now()
	full := func() bool { return false }
	_, err := r.enter(context.Background(), 1, "u:real", "", "", nil, now, nil, full)
	var real *QueuedError
	if !errors.As(err, &real) {
		t.Fatalf("the real buyer: %v, want a place", err)
	}
	for i := range 20_000 { // a flood within one second
		r.enter(context.Background(), 1, "u:bot-"+strconv.Itoa(i), "", "", nil, now.Add(time.Duration(i)*50*time.Microsecond), nil, full)
	}
	r.mu.Lock()
	buckets := len(r.queues[1].hist)
	r.mu.Unlock()
	if buckets > 101 {
		t.Errorf("20 000 places within a second kept in %d buckets, want at most 101", buckets)
	}
	r.tick(context.Background(), now.Add(time.Second))
	if _, err := r.enter(context.Background(), 1, "u:real", "", real.Token, nil, now.Add(time.Second), nil, full); errors.As(err, &real) && real.Ahead != 0 {
		t.Errorf("the real buyer after the flood has %d ahead, want none: the flood came after it", real.Ahead)
	}
	// Far beyond the horizon: the last bucket.
	r.mu.Lock()
	q := r.queues[1]
	q.horizon = now.UnixMicro()
	r.mu.Unlock()
	r.enter(context.Background(), 1, "u:far", "", "", nil, now.Add(24*time.Hour), nil, full)
	r.mu.Lock()
	defer r.mu.Unlock()
	for b := range q.hist {
		if b > q.horizon/roomBucket.Microseconds()+roomMaxBuckets {
			t.Errorf("a bucket %d past the bound", b)
		}
	}
}
