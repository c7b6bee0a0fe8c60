package e2e

import (
	"bufio"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// (h) of `make bench-shop`, run alone with BENCH_SHOP_COST=only: where a
// purchase's time goes, per strategy, over one goods and over 200 (the
// first two sales of (e), one round each): the CPU each process spends
// per purchase (read from /proc over the load alone), how busy the
// machine was, and what a purchase asks of ZooKeeper (requests, lock
// holds) and of MariaDB (statements, commits, row-lock waits), from the
// servers' own counters (ZooKeeper's mntr, MariaDB's SHOW GLOBAL STATUS).
// The processes of MariaDB and ZooKeeper are found by the port they
// listen on; the load generator is this benchmark's own process.

// saleCost is what one sale of (h) measured over its load.
type saleCost struct {
	purchases int           // buyers answered 200
	rate      float64       // purchases/s, as (e) counts them
	elapsed   time.Duration // the load's
	machine   time.Duration // every core's CPU out of idle
	cpu       map[string]time.Duration
	zkPackets float64 // requests ZooKeeper received
	holds     float64 // purchase lock holds of both instances
	status    map[string]float64
}

// costProcesses are the processes (h) reads the CPU of, in the table's order.
var costProcesses = []string{"shops", "MariaDB", "ZooKeeper", "load"}

// costStatus are the MariaDB counters (h) reads.
var costStatus = []string{"Questions", "Com_commit", "Innodb_row_lock_waits", "Innodb_row_lock_time", "Handler_update", "Handler_write"}

// costProbe reads the counters of a sale before and after its load.
type costProbe struct {
	dsn, zk           string
	mariadbPID, zkPID int
	before            saleCost
	start             time.Time
}

// newCostProbe finds the processes of the database of dsn and of the
// ZooKeeper server zk by the ports they listen on.
func newCostProbe(b testing.TB, dsn, zk string) *costProbe {
	b.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		b.Fatal(err)
	}
	p := &costProbe{dsn: dsn, zk: zk}
	for _, x := range []struct {
		addr string
		pid  *int
	}{{cfg.Addr, &p.mariadbPID}, {zk, &p.zkPID}} {
		_, port, err := net.SplitHostPort(x.addr)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := strconv.Atoi(port)
		if *x.pid, err = listenerPID(n); err != nil {
			b.Fatalf("(h) reads the CPU of the process listening on %s, and found none: %v", x.addr, err)
		}
	}
	return p
}

// read is the counters now; instances are the sale's shops.
func (p *costProbe) read(b testing.TB, instances []*e2e.Instance) saleCost {
	b.Helper()
	c := saleCost{machine: machineCPU(b), cpu: map[string]time.Duration{}, status: map[string]float64{}}
	for _, in := range instances {
		c.cpu["shops"] += processCPU(b, in)
		c.holds += e2e.MetricSum(b, in.URL, "seckill_lock_hold_seconds_count")
	}
	c.cpu["MariaDB"] = pidCPU(b, p.mariadbPID)
	c.cpu["ZooKeeper"] = pidCPU(b, p.zkPID)
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	c.cpu["load"] = time.Duration(u.Utime.Nano() + u.Stime.Nano())
	c.zkPackets = zkPacketsReceived(b, p.zk)
	db, err := sql.Open("mysql", p.dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(costStatus, "','") + "')")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v float64
		if err := rows.Scan(&name, &v); err != nil {
			b.Fatal(err)
		}
		c.status[name] = v
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return c
}

// begin reads the counters as the load starts.
func (p *costProbe) begin(b testing.TB, instances []*e2e.Instance) {
	p.before = p.read(b, instances)
	p.start = time.Now()
}

// end is what the sale cost since begin.
func (p *costProbe) end(b testing.TB, instances []*e2e.Instance, run benchRun) saleCost {
	elapsed := time.Since(p.start)
	after := p.read(b, instances)
	c := saleCost{purchases: run.ok, rate: run.purchasesPerSec, elapsed: elapsed, machine: after.machine - p.before.machine,
		cpu: map[string]time.Duration{}, zkPackets: after.zkPackets - p.before.zkPackets, holds: after.holds - p.before.holds,
		status: map[string]float64{}}
	for k, v := range after.cpu {
		c.cpu[k] = v - p.before.cpu[k]
	}
	for k, v := range after.status {
		c.status[k] = v - p.before.status[k]
	}
	return c
}

// pidCPU is the CPU time process pid has spent so far (/proc/PID/stat's
// utime and stime).
func pidCPU(b testing.TB, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	var ticks int64
	for _, i := range []int{11, 12} { // utime, stime: fields 14 and 15 of the line
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// listenerPID is the process with a socket listening on TCP port on this
// machine: the socket's inode from /proc/net/tcp (or tcp6), then the
// process holding it among /proc/*/fd.
func listenerPID(port int) (int, error) {
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st ... inode (field 9)
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inode = fields[9]
			}
		}
		f.Close()
		if inode != "" {
			break
		}
	}
	if inode == "" {
		return 0, fmt.Errorf("nothing listens on port %d", port)
	}
	want := "socket:[" + inode + "]"
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if target, err := os.Readlink(fd); err == nil && target == want {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("no process of this machine holds the socket listening on port %d (not root?)", port)
}

// zkPacketsReceived is mntr's zk_packets_received of the server at addr.
func zkPacketsReceived(b testing.TB, addr string) float64 {
	b.Helper()
	answer := fourLetterWord(b, addr, "mntr")
	for _, line := range strings.Split(answer, "\n") {
		if v, ok := strings.CutPrefix(line, "zk_packets_received"); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("ZooKeeper at %s: no zk_packets_received in its mntr answer (is 4lw.commands.whitelist set?): %q", addr, answer)
	return 0
}

// benchCost runs (h): each strategy over one goods and over 200, once.
func benchCost(b *testing.B, strategies []string, buyers, conc int) map[string]map[string]saleCost {
	costs := map[string]map[string]saleCost{}
	for _, st := range strategies {
		costs[st] = map[string]saleCost{}
		for _, sale := range manySales[:2] {
			progress("(h) where the time goes: %s, %s", st, sale.name)
			dsn := e2e.Database(b)
			probe := newCostProbe(b, dsn, e2e.ZooKeeper(b)[0])
			var c saleCost
			benchManySaleOn(b, st, sale, buyers, conc, []string{dsn, dsn}, func(ins []*e2e.Instance, run *benchRun) {
				if run == nil {
					probe.begin(b, ins)
					return
				}
				c = probe.end(b, ins, *run)
			})
			costs[st][sale.name] = c
		}
	}
	return costs
}

// benchCostTable is (h)'s table.
func benchCostTable(strategies []string, buyers, conc int, costs map[string]map[string]saleCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(h) where the time goes: two instances per strategy on one MariaDB and ZooKeeper, %d buyers, %d at a time, one round per sale\n", buyers, conc)
	fmt.Fprintf(&b, "%-8s %-10s %11s %6s | %-38s | %7s %9s %9s | %8s %8s %9s %9s\n", "strategy", "sale", "purchases/s", "busy",
		"CPU us per purchase: all  "+strings.Join(costProcesses, " "), "ZK req", "per hold", "ZK/hold",
		"SQL", "commits", "rows upd", "lock wait")
	for _, st := range strategies {
		for _, sale := range manySales[:2] {
			c, ok := costs[st][sale.name]
			if !ok || c.purchases == 0 {
				continue
			}
			n := float64(c.purchases)
			us := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
			var procs []string
			for _, p := range costProcesses {
				procs = append(procs, fmt.Sprintf("%.0f", us(c.cpu[p])))
			}
			perHold, zkPerHold, waitPerHold := "-", "-", "-"
			if c.holds > 0 {
				perHold = fmt.Sprintf("%.1f", n/c.holds)
				zkPerHold = fmt.Sprintf("%.1f", c.zkPackets/c.holds)
				waitPerHold = fmt.Sprintf("%.2f", c.status["Innodb_row_lock_waits"]/c.holds)
			} else {
				waitPerHold = fmt.Sprintf("%.2f/p", c.status["Innodb_row_lock_waits"]/n)
			}
			fmt.Fprintf(&b, "%-8s %-10s %11.0f %6.2f | %-38s | %7.2f %9s %9s | %8.1f %8.3f %9.3f %9s\n", st, sale.name,
				c.rate, c.machine.Seconds()/c.elapsed.Seconds(),
				fmt.Sprintf("%.0f = %s", us(c.machine), strings.Join(procs, " + ")),
				c.zkPackets/n, perHold, zkPerHold,
				c.status["Questions"]/n, c.status["Com_commit"]/n, c.status["Handler_update"]/n, waitPerHold)
		}
	}
	fmt.Fprintln(&b, "(busy: cores of the machine out of idle during the load; all: the machine's CPU, the processes' and the rest (kernel, other processes); "+
		"ZK req: requests ZooKeeper received per purchase, per hold: purchases per lock hold, ZK/hold: requests per hold; "+
		"SQL: statements MariaDB counted per purchase (Questions), commits and rows updated per purchase, lock wait: row-lock waits per hold (per purchase, /p, without a lock))")
	return b.String()
}

// TestListenerPIDFindsTheListener: (h) finds MariaDB's and ZooKeeper's
// processes by their ports; here, this process's own listener.
func TestListenerPIDFindsTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := listenerPID(port)
	if err != nil {
		t.Fatal(err)
	}
	if pid != os.Getpid() {
		t.Fatalf("listenerPID(%d) = %d, want this process, %d", port, pid, os.Getpid())
	}
	ln.Close()
	if pid, err := listenerPID(port); err == nil {
		t.Fatalf("listenerPID(%d) = %d after the listener closed, want an error", port, pid)
	}
}
