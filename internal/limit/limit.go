// Package limit paces requests per key (a buyer, a client address) with a
// token bucket each, in bounded memory: however many keys come, at most
// MaxKeys buckets are kept, the least recently used given up first. A bucket
// given up is one that starts full again if its key comes back: the bound
// forgives the least recent key, never refuses a new one.
package limit

import (
	"container/list"
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// DefaultMaxKeys bounds the buckets of a Keyed limiter when its Options
// give no bound: about 10 MB at most.
const DefaultMaxKeys = 1 << 16

// shards spread the keys over independently locked maps.
const shards = 32

// Options configure a Keyed limiter.
type Options struct {
	// Rate is the tokens a key earns per second; Burst the most it holds
	// (and has at first). Both must be positive.
	Rate  float64
	Burst int
	// MaxKeys bounds the buckets kept; 0: DefaultMaxKeys.
	MaxKeys int
}

// Keyed is a token bucket per key.
type Keyed struct {
	rate, burst float64
	seed        maphash.Seed
	shards      [shards]shard
}

type shard struct {
	mu      sync.Mutex
	max     int
	buckets map[string]*list.Element // of *bucket, most recent first
	lru     list.List
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

// New returns a limiter of opts.
func New(opts Options) *Keyed {
	if opts.Rate <= 0 || opts.Burst <= 0 {
		panic("limit: Rate and Burst must be positive")
	}
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	k := &Keyed{rate: opts.Rate, burst: float64(opts.Burst), seed: maphash.MakeSeed()}
	for i := range k.shards {
		k.shards[i].max = max(1, maxKeys/shards)
		k.shards[i].buckets = map[string]*list.Element{}
	}
	return k
}

// Allow takes a token of key's bucket at now. When the bucket has none it
// takes nothing and says how long until it has one.
func (k *Keyed) Allow(key string, now time.Time) (ok bool, retryAfter time.Duration) {
	s := &k.shards[maphash.String(k.seed, key)%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	var b *bucket
	if e, found := s.buckets[key]; found {
		s.lru.MoveToFront(e)
		b = e.Value.(*bucket)
		if d := now.Sub(b.last); d > 0 {
			b.tokens = math.Min(k.burst, b.tokens+d.Seconds()*k.rate)
			b.last = now
		}
	} else {
		if len(s.buckets) >= s.max {
			oldest := s.lru.Back()
			delete(s.buckets, s.lru.Remove(oldest).(*bucket).key)
		}
		b = &bucket{key: key, tokens: k.burst, last: now}
		s.buckets[key] = s.lru.PushFront(b)
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / k.rate * float64(time.Second)))
	return false, wait
}

// Len is how many buckets are kept.
func (k *Keyed) Len() int {
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}
