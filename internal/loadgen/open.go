package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seckill-zk/seckill-zk/internal/api"
)

// Profile is an open loop's schedule: requests arrive at Rate a second for
// Duration, whether or not earlier ones were answered. With RampUp the
// rate grows from 0 to Rate over RampUp first (a spike: 0 to Rate in a
// second, then held), within Duration.
type Profile struct {
	Rate     float64
	Duration time.Duration
	RampUp   time.Duration
}

// Requests is how many requests the profile schedules.
func (p Profile) Requests() int {
	d, u := p.Duration.Seconds(), min(p.RampUp, p.Duration).Seconds()
	return int(p.Rate*(d-u) + p.Rate*u/2)
}

// At is when request i is to be sent, after the start: i/Rate once the
// ramp is over; on the ramp, where the rate is Rate·t/RampUp, the time at
// which i requests have arrived (Rate·t²/2RampUp = i).
func (p Profile) At(i int) time.Duration {
	u := p.RampUp.Seconds()
	onRamp := p.Rate * u / 2 // requests that arrive during the ramp
	var t float64
	if float64(i) < onRamp {
		t = math.Sqrt(2 * u * float64(i) / p.Rate)
	} else {
		t = u + (float64(i)-onRamp)/p.Rate
	}
	return time.Duration(t * float64(time.Second))
}

// OpenOptions is an open-loop run.
type OpenOptions struct {
	Targets []string // base URLs (http://host:port), one per connection, round-robin
	// Target, if set, is request i's base URL instead, asked when a
	// connection takes the request: a target chosen at send time (a load
	// balancer that stops sending to a dead instance). Each connection
	// then keeps a keep-alive connection to every target it was given.
	Target  func(i int) string
	Profile Profile
	// Connections bounds the keep-alive connections (one worker each). A
	// request due while every one is busy waits for one, and its latency
	// counts that wait: it is measured from the intended send time.
	// Default DefaultConnections.
	Connections int
	// Timeout is how long a buyer waits for an answer after its intended
	// send time; then it closes its connection and is gone. Default
	// DefaultOpenTimeout.
	Timeout time.Duration
	// SendTimeout sends X-Request-Timeout-Ms with the time the buyer has
	// left, so that the shop sells it nothing after that: less a tenth (at
	// most timeoutMargin), since the shop counts from when it reads the
	// request and a commit it sent just before its deadline is answered
	// after it: the buyer is still there to hear it.
	SendTimeout bool
	// Request is request i's path and header pairs (name, value, ...).
	Request func(i int) (path string, header []string)
	// Record keeps every request's Record in the result.
	Record bool
	// Patience, if set, makes each buyer patient (see comeBack): told to
	// come back, it is due again after the time the shop said, with its
	// place, and takes the next free connection (a balancer's next
	// instance), until another answer or until Patience has passed since
	// it was first due. Its Record is its last answer, timed from its
	// first due time; retries are counted in Retries.
	Patience time.Duration
	// ShopHeaders: a patient buyer comes back after X-Retry-After-Ms with
	// X-Place, the shop's own headers, instead of after Retry-After with
	// the place's cookie as a standard client does (see comeBack).
	ShopHeaders bool
	// Sticky: a patient buyer comes back to the instance it first asked
	// (a balancer with sticky sessions), not to the next (Target(i+try)).
	Sticky bool
	// OnAnswer, if set, is told of every request once it is answered,
	// given up or left unsent, from the connections' goroutines at once.
	OnAnswer func(Record)
}

// Record is one request of an open loop.
type Record struct {
	Index    int
	Target   string    // the base URL it went to ("" if never sent)
	Intended time.Time // when it was due
	Sent     time.Time // when a connection took it (zero: never sent)
	Answer
}

// Latency is from the intended send time to the answer.
func (r Record) Latency() time.Duration { return r.End.Sub(r.Intended) }

// OpenResult is what an open loop saw. The histograms hold microseconds.
type OpenResult struct {
	Profile   Profile
	Scheduled int
	Sent      int // taken by a connection in time
	// NotSent: the buyer's timeout passed before a connection was free
	// for it; these buyers are counted gone, not answered.
	NotSent int
	// ClientTimeouts: sent, and no answer within the timeout.
	ClientTimeouts int
	// Errors: sent, and the exchange failed otherwise.
	Errors   int
	ByStatus map[int]int
	ByCode   map[string]int
	OK       int // 200s
	Retries  int // requests patient buyers sent again
	Elapsed  time.Duration
	// Latency: every answer's, from its intended send time; OKLatency the
	// 200s', RefusedLatency the 429s' and 503s'. Service is every answer's
	// from its actual send: what a load tool that suffers coordinated
	// omission would report.
	Latency, OKLatency, RefusedLatency, Service *hdrhistogram.Histogram
	// NotBought is every answer's but a 200's, from its actual send, a
	// patient buyer's answers that sent it back included: what the shop
	// takes to answer the buyers it does not sell to.
	NotBought *hdrhistogram.Histogram
	// SchedulerLag is how late the scheduler itself handed requests out
	// (the generator's own CPU); PoolWait how long a request waited from
	// its intended send time for a free connection (scheduler lag
	// included: the connections all busy, mostly).
	SchedulerLag, PoolWait *hdrhistogram.Histogram
	Records                []Record
}

// timeoutMargin bounds how much earlier than its own deadline a buyer
// tells the shop it leaves (OpenOptions.SendTimeout).
const timeoutMargin = 500 * time.Millisecond

// Offered is the rate asked for over the run, requests a second.
func (r *OpenResult) Offered() float64 { return float64(r.Scheduled) / r.Profile.Duration.Seconds() }

// Achieved is the rate at which requests were sent.
func (r *OpenResult) Achieved() float64 { return float64(r.Sent) / r.Profile.Duration.Seconds() }

// Goodput is 200s a second over the profile's duration.
func (r *OpenResult) Goodput() float64 { return float64(r.OK) / r.Profile.Duration.Seconds() }

// Behind says why the generator did not offer the rate asked, or "": its
// scheduler ran late (p99 over 10 ms past the moment it was free to send:
// its own CPU), or requests were never sent because every connection was
// busy past the buyer's timeout (too few connections). Requests that
// waited for a connection but were sent count that wait in their latency
// (PoolWait shows it) and do not make the run behind.
func (r *OpenResult) Behind() string {
	const late = 10 * time.Millisecond
	switch {
	case r.NotSent > 0:
		return fmt.Sprintf("%d of %d requests never sent: every connection was busy past the buyer's timeout (raise the connections)", r.NotSent, r.Scheduled)
	case time.Duration(r.SchedulerLag.ValueAtQuantile(99))*time.Microsecond > late:
		return fmt.Sprintf("the scheduler ran late (p99 %.1f ms): the generator's CPU could not keep %.0f requests/s",
			float64(r.SchedulerLag.ValueAtQuantile(99))/1000, r.Profile.Rate)
	}
	return ""
}

// Refused is the 429s and 503s.
func (r *OpenResult) Refused() int {
	return r.ByStatus[http.StatusTooManyRequests] + r.ByStatus[http.StatusServiceUnavailable]
}

// Gone is the buyers who left without an answer: not sent in time, timed
// out, or cut off.
func (r *OpenResult) Gone() int { return r.NotSent + r.ClientTimeouts + r.Errors }

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
}

// Ms is a histogram's quantile q (0-100) in milliseconds.
func Ms(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }

// Open runs an open loop: request i is due at Profile.At(i) after the
// start and is handed, when due, to a free connection of a fixed pool. It
// stops by itself once every scheduled request was answered or given up,
// or when ctx ends.
func Open(ctx context.Context, o OpenOptions) (*OpenResult, error) {
	if len(o.Targets) == 0 && o.Target == nil || o.Request == nil || o.Profile.Rate <= 0 || o.Profile.Duration <= 0 {
		return nil, errors.New("loadgen: an open loop needs targets, a request, a rate and a duration")
	}
	if o.Connections <= 0 {
		o.Connections = DefaultConnections
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultOpenTimeout
	}
	n := o.Profile.Requests()
	r := &OpenResult{Profile: o.Profile, Scheduled: n, ByStatus: map[int]int{}, ByCode: map[string]int{},
		Latency: newHist(), OKLatency: newHist(), RefusedLatency: newHist(), Service: newHist(), NotBought: newHist(),
		SchedulerLag: newHist(), PoolWait: newHist()}
	var records []Record
	if o.Record {
		records = make([]Record, n)
	}
	keep := func(rec Record) {
		if records != nil {
			records[rec.Index] = rec
		}
		if o.OnAnswer != nil {
			o.OnAnswer(rec)
		}
	}
	type due struct {
		i        int
		intended time.Time // when this request is due
		first    time.Time // when the buyer was first due
		try      int       // 0: its first request
		header   []string  // a retry's, with its place
		written  time.Time // its first request's Answer.Written and Arrived
		arrived  time.Time
	}
	work := make(chan due)
	var wg sync.WaitGroup
	var mu sync.Mutex         // r's counts and histograms
	var buyers sync.WaitGroup // buyers not answered for good: work closes after the last
	comeBackLater := func(d due, rec Record, wait time.Duration) {
		mu.Lock()
		r.Retries++
		r.NotBought.RecordValue(int64(rec.End.Sub(rec.Sent) / time.Microsecond))
		mu.Unlock()
		time.AfterFunc(wait, func() {
			select {
			case work <- d:
			case <-ctx.Done():
				keep(rec)
				buyers.Done()
			}
		})
	}
	for w := range o.Connections {
		wg.Go(func() {
			conns := map[string]*Conn{}
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			fixed := ""
			if o.Target == nil {
				fixed = o.Targets[w%len(o.Targets)]
			}
			for d := range work {
				taken := time.Now()
				rec := Record{Index: d.i, Intended: d.first}
				deadline := d.intended.Add(o.Timeout)
				left := time.Until(deadline)
				if left <= 0 {
					keep(rec)
					mu.Lock()
					r.NotSent++
					mu.Unlock()
					buyers.Done()
					continue
				}
				path, base := o.Request(d.i)
				if d.try > 0 {
					base = d.header
				}
				header := base
				if o.SendTimeout {
					told := left - min(left/10, timeoutMargin)
					header = append(slices.Clip(base), "X-Request-Timeout-Ms", strconv.FormatInt(max(1, told.Milliseconds()), 10))
				}
				rec.Sent, rec.Target = taken, fixed
				if o.Target != nil && o.Sticky {
					rec.Target = o.Target(d.i)
				} else if o.Target != nil {
					rec.Target = o.Target(d.i + d.try)
				}
				conn := conns[rec.Target]
				if conn == nil {
					conn = NewConn(rec.Target)
					conns[rec.Target] = conn
				}
				rec.Answer = conn.DoBy(deadline, http.MethodGet, path, header...)
				rec.Tries = d.try + 1
				if d.try > 0 {
					rec.Written, rec.Arrived = d.written, d.arrived
				}
				if o.Patience > 0 {
					if wait, ok := comeBack(rec.Answer, o.ShopHeaders); ok {
						wait = jitter(wait)
						if at := time.Now().Add(wait); at.Before(d.first.Add(o.Patience)) {
							again := due{i: d.i, intended: at, first: d.first, try: d.try + 1, header: withPlace(base, rec.Answer, o.ShopHeaders),
								written: rec.Written, arrived: rec.Arrived}
							comeBackLater(again, rec, wait)
							continue
						}
					}
				}
				keep(rec)
				buyers.Done()
				mu.Lock()
				r.Sent++
				r.PoolWait.RecordValue(int64(taken.Sub(d.intended) / time.Microsecond))
				switch {
				case errors.Is(rec.Err, os.ErrDeadlineExceeded):
					r.ClientTimeouts++
				case rec.Err != nil:
					r.Errors++
				default:
					us := int64(rec.Latency() / time.Microsecond)
					r.Latency.RecordValue(us)
					r.Service.RecordValue(int64(rec.End.Sub(rec.Sent) / time.Microsecond))
					if rec.Status != http.StatusOK {
						r.NotBought.RecordValue(int64(rec.End.Sub(rec.Sent) / time.Microsecond))
					}
					r.ByStatus[rec.Status]++
					r.ByCode[rec.Code]++
					switch {
					case rec.Status == http.StatusOK && rec.Code == api.OK:
						r.OK++
						r.OKLatency.RecordValue(us)
					case rec.Status == http.StatusTooManyRequests || rec.Status == http.StatusServiceUnavailable:
						r.RefusedLatency.RecordValue(us)
					}
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	timer := time.NewTimer(0)
	<-timer.C
	free := start // when the scheduler was last free: its previous hand-off done
schedule:
	for i := range n {
		intended := start.Add(o.Profile.At(i))
		if wait := time.Until(intended); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				break schedule
			}
		}
		// Its own lateness: since it could have sent (a wait for a free
		// connection is the pool's, counted by the worker).
		lag := time.Since(later(intended, free))
		buyers.Add(1)
		select {
		case work <- due{i: i, intended: intended, first: intended}:
		case <-ctx.Done():
			buyers.Done()
			break schedule
		}
		free = time.Now()
		mu.Lock()
		r.SchedulerLag.RecordValue(int64(max(lag, 0) / time.Microsecond))
		mu.Unlock()
	}
	buyers.Wait() // the patient ones' last answers
	close(work)
	wg.Wait()
	r.Elapsed = time.Since(start)
	r.Records = records
	return r, ctx.Err()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
