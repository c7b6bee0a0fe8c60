package metrics

import (
	"maps"
	"slices"
	"time"
)

// The dashboard's numbers: a goods' history of samples and one instance's
// snapshot of it.

// Point is one second of a goods' history on one instance, as the sampler
// saw it: the dashboard draws the sale so far from these.
type Point struct {
	Time        int64            `json:"time"` // Unix milliseconds
	Stock       int32            `json:"stock"`
	Orders      int64            `json:"orders"`
	Outcomes    map[string]int64 `json:"outcomes"` // this instance's answers for the goods since it started
	LockWaitP50 float64          `json:"lockWaitP50Ms"`
	LockWaitP99 float64          `json:"lockWaitP99Ms"`
	QueueLength int              `json:"queueLength"`
}

// History returns the goods' points, oldest first.
func (m *Metrics) History(goodsNo int32) []Point {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.history[goodsNo])
}

// Snapshot is what the dashboard shows of one instance, for one goods.
type Snapshot struct {
	Time        int64            `json:"time"` // Unix milliseconds
	Strategy    string           `json:"strategy"`
	ZooKeeper   string           `json:"zookeeper"` // connected, suspended, lost, none
	Leader      bool             `json:"leader"`
	GoodsNo     int32            `json:"goodsNo"`
	Sampled     bool             `json:"sampled"` // the goods' row has been sampled
	Goods       GoodsSample      `json:"goods"`
	Outcomes    map[string]int64 `json:"outcomes"` // this instance's answers for the goods, by outcome, since it started
	LockWaitP50 float64          `json:"lockWaitP50Ms"`
	LockWaitP99 float64          `json:"lockWaitP99Ms"`
	LockWaits   int              `json:"lockWaits"` // waits the percentiles are of: the last 10 s
	QueueLength int              `json:"queueLength"`
	// Sale is the sale across goods; AllOutcomes this instance's answers
	// for every goods, by outcome, since it started.
	Sale        SaleSample       `json:"sale"`
	AllOutcomes map[string]int64 `json:"allOutcomes"`
	// Admission is this instance's purchase admission: in progress, the
	// limit, its measured rate and the buyers refused busy.
	Admission Admission `json:"admission"`
	// Room is the waiting room's (room.enabled), absent without one.
	Room *Room `json:"room,omitempty"`
	// Problems are what keeps this instance from selling or sweeping, for
	// a person to read (the ZooKeeper paths, the election).
	Problems []string `json:"problems"`
}

// Snapshot returns the live numbers of goodsNo from memory: no query, no lock.
func (m *Metrics) Snapshot(goodsNo int32) Snapshot {
	now := time.Now()
	m.mu.Lock()
	s := Snapshot{Time: now.UnixMilli(), Strategy: m.strategy, ZooKeeper: m.state, Leader: m.leading, GoodsNo: goodsNo,
		Outcomes: maps.Clone(m.outcomes[goodsNo]), QueueLength: m.queues[goodsNo]}
	if s.Outcomes == nil {
		s.Outcomes = map[string]int64{}
	}
	s.Goods, s.Sampled = m.samples[goodsNo]
	s.Sale, s.AllOutcomes = m.saleSnapshot()
	admission, coordination, room := m.admission, m.coordination, m.room
	m.mu.Unlock()
	if admission != nil {
		s.Admission = admission()
	}
	if room != nil {
		r := room()
		s.Room = &r
	}
	s.Problems = []string{}
	if coordination != nil {
		c := coordination()
		if c.PathsProblem != "" {
			s.Problems = append(s.Problems, c.PathsProblem)
		}
		if c.PathsOpen != "" {
			s.Problems = append(s.Problems, c.PathsOpen)
		}
		if c.ElectionErr != "" {
			s.Problems = append(s.Problems, c.ElectionErr)
		}
		if c.Electing && c.Participants == 0 {
			s.Problems = append(s.Problems, "no instance is queued in the sweeper's election: nobody expires this database's unpaid orders")
		}
	}
	s.LockWaitP50, s.LockWaitP99, s.LockWaits = m.recentWaits(now)
	return s
}

// recentWaits returns the p50 and p99 in milliseconds of the lock waits of
// the last ten seconds, and their number. It copies them under the lock
// the purchases record with and sorts them outside it.
func (m *Metrics) recentWaits(now time.Time) (p50, p99 float64, n int) {
	var recent []time.Duration
	m.mu.Lock()
	for _, w := range m.waits {
		if now.Sub(w.at) <= 10*time.Second {
			recent = append(recent, w.d)
		}
	}
	m.mu.Unlock()
	if len(recent) == 0 {
		return 0, 0, 0
	}
	slices.Sort(recent)
	at := func(p float64) float64 {
		return float64(recent[min(len(recent)-1, int(p*float64(len(recent))))].Microseconds()) / 1000
	}
	return at(0.50), at(0.99), len(recent)
}
