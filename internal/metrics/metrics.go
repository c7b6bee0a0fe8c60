// Package metrics is the shop's Prometheus instrumentation and the live
// numbers its dashboard shows. The other packages do not import Prometheus:
// the handler and zklock declare small observer interfaces, and Metrics
// implements them.
package metrics

import (
	"database/sql"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// maxGoods bounds the goods numbers that get a label of their own: a goods
// that exists and was asked for. Further goods share the label "other", and
// goods numbers from bad input never become labels.
const maxGoods = 32

// waitBuckets are the buckets of waits and answers: 0.5 ms to 30 s, each
// 1.5 times the last, fine enough for a p99 read off them to be within a
// quarter of the truth.
var waitBuckets = prometheus.ExponentialBucketsRange(0.0005, 30, 28)

// Metrics holds the shop's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	strategy string

	purchases   *prometheus.CounterVec   // goods, outcome, strategy
	purchaseDur *prometheus.HistogramVec // outcome
	lockWait    *prometheus.HistogramVec // path
	lockHold    *prometheus.HistogramVec // path
	queueLen    *prometheus.GaugeVec     // path
	zkState     prometheus.Gauge
	zkChanges   *prometheus.CounterVec // state
	leader      prometheus.Gauge
	stock       *prometheus.GaugeVec // goods
	orders      *prometheus.GaugeVec // goods, status

	mu       sync.Mutex
	goods    []int32                    // the goods with labels of their own, at most maxGoods
	watched  map[int32]time.Time        // goods the dashboard asked for, when last: sampled, never labelled
	outcomes map[int32]map[string]int64 // purchases by goods and outcome, for the dashboard
	waits    []timedWait                // recent lock waits, a ring
	next     int
	state    string
	leading  bool
	samples  map[int32]GoodsSample
	queues   map[int32]int
	history  map[int32][]Point // per tracked goods, a point a sample, the last historyLen
	sale     saleState
	// admission, when set, is the purchase admission's numbers; room the
	// waiting room's.
	admission func() Admission
	room      func() Room
	// coordination, when set, says what keeps this instance from taking
	// part in the sale or the election (Coordination).
	coordination func() Coordination
}

// historyLen is how many points of a goods' history an instance keeps: a
// sample a second, a quarter of an hour.
const historyLen = 900

type timedWait struct {
	at time.Time
	d  time.Duration
}

// GoodsSample is a goods' row as last sampled.
type GoodsSample struct {
	Stock          int32            `json:"stock"`
	Orders         int64            `json:"orders"`
	OrdersByStatus map[string]int64 `json:"ordersByStatus"`
}

// New returns the shop's metrics for an instance selling with strategy.
// db, if not nil, is the pool whose statistics are exported.
func New(strategy string, db *sql.DB) *Metrics {
	m := &Metrics{
		reg:      prometheus.NewRegistry(),
		strategy: strategy,
		purchases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_purchases_total", Help: "Purchases answered, by goods, outcome (the answer's code) and strategy.",
		}, []string{"goods", "outcome", "strategy"}),
		purchaseDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_purchase_duration_seconds", Help: "Time to answer a purchase, by outcome.",
			Buckets: waitBuckets,
		}, []string{"outcome"}),
		lockWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_lock_wait_seconds", Help: "Time from asking for a purchase lock to holding it, by lock path.",
			Buckets: waitBuckets,
		}, []string{"path"}),
		lockHold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_lock_hold_seconds", Help: "Time a purchase lock was held, by lock path.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"path"}),
		queueLen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_lock_queue_length", Help: "Nodes queued on a purchase lock (holder included), sampled.",
		}, []string{"path"}),
		zkState: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_zookeeper_state", Help: "ZooKeeper connection: 1 connected, 0.5 suspended, 0 lost (or no connection yet).",
		}),
		zkChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_zookeeper_state_changes_total", Help: "ZooKeeper connection state changes, by new state.",
		}, []string{"state"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_leader", Help: "1 while this instance leads the election (and sweeps expired orders).",
		}),
		stock: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_stock", Help: "A goods' stock, sampled.",
		}, []string{"goods"}),
		orders: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_orders_total", Help: "A goods' order rows by status, sampled.",
		}, []string{"goods", "status"}),
		outcomes: map[int32]map[string]int64{},
		history:  map[int32][]Point{},
		waits:    make([]timedWait, 0, 4096),
		state:    "none",
		samples:  map[int32]GoodsSample{},
		watched:  map[int32]time.Time{},
		queues:   map[int32]int{},
	}
	m.reg.MustRegister(m.purchases, m.purchaseDur, m.lockWait, m.lockHold, m.queueLen, m.zkState, m.zkChanges,
		m.leader, m.stock, m.orders,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if db != nil {
		m.reg.MustRegister(collectors.NewDBStatsCollector(db, "seckill"))
	}
	return m
}

// Pool exports the statistics of another connection pool, as go_sql_*
// with db_name name.
func (m *Metrics) Pool(name string, db *sql.DB) {
	m.reg.MustRegister(collectors.NewDBStatsCollector(db, name))
}

// LockStats exports a ZooKeeper client's lock counters: how waiters were
// woken, how often they listed the queue, and how many hand-offs needed no
// listing (zklock.Stats).
func (m *Metrics) LockStats(stats func() zklock.Stats) {
	counter := func(name, help string, v func(zklock.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	m.reg.MustRegister(
		counter("seckill_lock_wakeups_total", "Lock waiters woken by a watch on the node ahead of theirs.",
			func(s zklock.Stats) int64 { return s.Wakeups }),
		counter("seckill_lock_listings_total", "Listings of a lock's queue (getChildren) made for waiters.",
			func(s zklock.Stats) int64 { return s.Listings }),
		counter("seckill_lock_shortcuts_total", "Hand-offs a waiter took without listing the queue again.",
			func(s zklock.Stats) int64 { return s.Shortcuts }),
	)
}

// Admission is what the purchase admission shows of itself: how many
// purchases are in progress, how many it lets in, the purchases a second
// it measured while busy and per second of work, and how many buyers it
// refused busy.
type Admission struct {
	InFlight int     `json:"inFlight"`
	Limit    int     `json:"limit"`
	Rate     float64 `json:"rate"`
	WorkRate float64 `json:"workRate"`
	Refused  uint64  `json:"refused"`
}

// AdmissionStats exports the purchase admission's numbers, and shows them
// on the dashboard.
func (m *Metrics) AdmissionStats(stats func() Admission) {
	gauge := func(name, help string, v func(Admission) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	m.reg.MustRegister(
		gauge("seckill_admission_in_flight", "Purchases in progress in this instance (admitted, not yet answered).",
			func(a Admission) float64 { return float64(a.InFlight) }),
		gauge("seckill_admission_limit", "Purchases this instance lets be in progress: its measured purchases/s times purchase.queueTarget, within purchase.maxWaiting.",
			func(a Admission) float64 { return float64(a.Limit) }),
		gauge("seckill_admission_rate", "Purchases a second this instance completes while busy, as the admission measured them (0: not yet).",
			func(a Admission) float64 { return a.Rate }),
		gauge("seckill_admission_work_rate", "Purchases a second of work (idle time left out) this instance completes: what the waiting room lets in (0: not yet).",
			func(a Admission) float64 { return a.WorkRate }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_admission_refused_total", Help: "Buyers refused busy (503) because the admission had no room."},
			func() float64 { return float64(stats().Refused) }),
	)
	m.mu.Lock()
	m.admission = stats
	m.mu.Unlock()
}

// Room is what the waiting room shows of itself: the places this instance
// gave that wait beyond their horizon, the places let in a second, and the
// expected wait of a place given now.
type Room struct {
	Waiting     int64   `json:"waiting"`
	LetInPerSec float64 `json:"letInPerSec"`
	WaitSeconds float64 `json:"waitSeconds"`
}

// RoomStats exports the waiting room's numbers, and shows them on the
// dashboard.
func (m *Metrics) RoomStats(stats func() Room) {
	gauge := func(name, help string, v func(Room) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(stats()) })
	}
	m.reg.MustRegister(
		gauge("seckill_room_waiting", "Places this instance gave in the waiting room that wait beyond their goods' horizon.",
			func(r Room) float64 { return float64(r.Waiting) }),
		gauge("seckill_room_let_in_per_second", "Places the horizons passed a second (let in), as this instance counts its own places.",
			func(r Room) float64 { return r.LetInPerSec }),
		gauge("seckill_room_wait_seconds", "The expected wait of a place given now (the longest goods').",
			func(r Room) float64 { return r.WaitSeconds }),
	)
	m.mu.Lock()
	m.room = stats
	m.mu.Unlock()
}

// Coordination is this instance's standing on ZooKeeper beyond the
// connection: whether the paths it sells and elects under are its own, the
// refusals (NoAuth) it met there, and its place in the election.
type Coordination struct {
	PathsProblem string // "" while the shop's ZooKeeper paths are its own
	PathsOpen    string // "" while they are closed to others (zookeeper.auth); else what that allows
	NoAuth       int64  // ZooKeeper's NoAuth refusals met on a purchase's way
	Electing     bool   // this instance takes part in an election
	ElectionErr  string // "" while it is queued in the election, or leads it
	Participants int    // instances queued in the election, as last sampled (-1: could not be read)
}

// CoordinationStats exports stats: seckill_zookeeper_paths_owned,
// seckill_zookeeper_noauth_total and, when the instance elects,
// seckill_leader_queued and seckill_leader_participants. Their problems go
// on the dashboard.
func (m *Metrics) CoordinationStats(stats func() Coordination) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_zookeeper_paths_owned",
			Help: "1 while the ZooKeeper paths the shop sells and elects under are its own (made with its ACL), 0 when one is not (a purchase or the election is refused there)."},
			func() float64 { return map[bool]float64{true: 1}[stats().PathsProblem == ""] }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_zookeeper_paths_open",
			Help: "1 while the shop's ZooKeeper paths are open to anyone (no zookeeper.auth): any client that reaches ZooKeeper may hold its locks or its election, unseen."},
			func() float64 { return map[bool]float64{true: 1}[stats().PathsOpen != ""] }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_zookeeper_noauth_total",
			Help: "ZooKeeper refusals (NoAuth) met on a purchase's way: a node on its path has an ACL that is not the shop's."},
			func() float64 { return float64(stats().NoAuth) }),
	)
	if stats().Electing {
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_leader_queued",
				Help: "1 while this instance is queued in the sweeper's election (or leads it), 0 while it cannot queue."},
				func() float64 { return map[bool]float64{true: 1}[stats().ElectionErr == ""] }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_leader_participants",
				Help: "Instances queued in this database's sweeper election, as this instance last read it: 0 means no instance sweeps this database's expired orders, -1 that it could not be read."},
				func() float64 { return float64(stats().Participants) }),
		)
	}
	m.mu.Lock()
	m.coordination = stats
	m.mu.Unlock()
}

// MySQLDurable exports whether every MySQL server the sales write to
// flushes its log at each commit (innodb_flush_log_at_trx_commit=1), as
// read at the start: seckill_mysql_durable_commits.
func (m *Metrics) MySQLDurable(durable bool) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "seckill_mysql_durable_commits",
		Help: "1 when every MySQL server the sales write to flushes its log at each commit (innodb_flush_log_at_trx_commit=1), 0 when one acknowledges commits a crash can lose (read at the start)."})
	g.Set(map[bool]float64{true: 1}[durable])
	m.reg.MustRegister(g)
}

// Gather returns the metric families registered, as a scrape would.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) { return m.reg.Gather() }

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// LockObserver returns zklock's observer for the purchase locks: lockPath
// maps a lock node's directory to its label (the configured path, with
// {goodsNo} in it), or "" for locks that are not purchase locks (the
// election's), which are not recorded.
func (m *Metrics) LockObserver(label func(dir string) string) zklock.Observer {
	return lockObserver{m: m, label: label}
}

type lockObserver struct {
	m     *Metrics
	label func(string) string
}

func (o lockObserver) LockAcquired(dir string, waited time.Duration) {
	l := o.label(dir)
	if l == "" {
		return
	}
	o.m.lockWait.WithLabelValues(l).Observe(waited.Seconds())
	o.m.mu.Lock()
	w := timedWait{time.Now(), waited}
	if len(o.m.waits) < cap(o.m.waits) {
		o.m.waits = append(o.m.waits, w)
	} else {
		o.m.waits[o.m.next] = w
		o.m.next = (o.m.next + 1) % len(o.m.waits)
	}
	o.m.mu.Unlock()
}

func (o lockObserver) LockReleased(dir string, held time.Duration) {
	if l := o.label(dir); l != "" {
		o.m.lockHold.WithLabelValues(l).Observe(held.Seconds())
	}
}

// ZooKeeperState records a connection state change (zklock.Client.Listen).
func (m *Metrics) ZooKeeperState(s zk.State) {
	m.zkChanges.WithLabelValues(s.String()).Inc()
	v := map[zk.State]float64{zk.StateConnected: 1, zk.StateReconnected: 1, zk.StateSuspended: 0.5, zk.StateLost: 0}[s]
	m.zkState.Set(v)
	m.mu.Lock()
	m.state = map[zk.State]string{zk.StateConnected: "connected", zk.StateReconnected: "connected",
		zk.StateSuspended: "suspended", zk.StateLost: "lost"}[s]
	m.mu.Unlock()
}

// Leading records whether this instance leads the election.
func (m *Metrics) Leading(leads bool) {
	m.leader.Set(map[bool]float64{true: 1}[leads])
	m.mu.Lock()
	m.leading = leads
	m.mu.Unlock()
}

// SampledGoods records a goods' row and its orders by status.
func (m *Metrics) SampledGoods(goodsNo int32, s GoodsSample) {
	now := time.Now()
	p50, p99, _ := m.recentWaits(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Contains(m.goods, goodsNo) { // a watched goods has no gauges
		g := strconv.Itoa(int(goodsNo))
		m.stock.WithLabelValues(g).Set(float64(s.Stock))
		for status, n := range s.OrdersByStatus {
			m.orders.WithLabelValues(g, status).Set(float64(n))
		}
	} else if _, ok := m.watched[goodsNo]; !ok {
		return // no longer watched
	}
	m.samples[goodsNo] = s
	p := Point{Time: now.UnixMilli(), Stock: s.Stock, Orders: s.Orders, Outcomes: maps.Clone(m.outcomes[goodsNo]), QueueLength: m.queues[goodsNo],
		LockWaitP50: p50, LockWaitP99: p99}
	h := append(m.history[goodsNo], p)
	if len(h) > historyLen {
		h = slices.Delete(h, 0, len(h)-historyLen)
	}
	m.history[goodsNo] = h
}

// SampledQueue records the nodes queued on the lock of goodsNo at path.
func (m *Metrics) SampledQueue(goodsNo int32, path string, n int) {
	m.queueLen.WithLabelValues(path).Set(float64(n))
	m.mu.Lock()
	m.queues[goodsNo] = n
	m.mu.Unlock()
}
