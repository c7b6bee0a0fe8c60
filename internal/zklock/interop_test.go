package zklock_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// Debian's Curator 5 and what it needs at run time.
var curatorJars = []string{
	"curator-framework", "curator-client", "curator-recipes", "zookeeper", "zookeeper-jute",
	"guava", "slf4j-api", "slf4j-nop", "netty-handler", "netty-common", "netty-buffer",
	"netty-transport", "netty-resolver", "netty-codec", "netty-transport-native-epoll",
	"netty-transport-native-unix-common",
}

const javaHowTo = "the Java Curator interop test needs a JDK and Debian's Curator: " +
	"`make stack-up` installs them (apt-get install default-jdk-headless libcurator-recipes-java)"

// javaPeer compiles testdata/CuratorPeer.java once per test and returns the
// command line prefix that runs it.
func javaPeer(t *testing.T) []string {
	t.Helper()
	var cp []string
	for _, j := range curatorJars {
		p := filepath.Join("/usr/share/java", j+".jar")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s missing: %s", p, javaHowTo)
		}
		cp = append(cp, p)
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Fatalf("no javac: %s", javaHowTo)
	}
	out := t.TempDir()
	classpath := strings.Join(cp, ":")
	if b, err := exec.Command(javac, "-cp", classpath, "-d", out, "testdata/CuratorPeer.java").CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, b)
	}
	return []string{"java", "-cp", out + ":" + classpath, "CuratorPeer", e2e.ZooKeeper(t)[0]}
}

// peer is a running CuratorPeer whose output lines arrive on lines.
type peer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{} // closed when the process has exited
	err   error         // its exit error, once done is closed
}

func startPeer(t *testing.T, args ...string) *peer {
	t.Helper()
	return startPeerWith(t, nil, args...)
}

// startPeerWith starts a peer with env added to the test's environment.
func startPeerWith(t *testing.T, env []string, args ...string) *peer {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &peer{cmd: cmd, stdin: stdin, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	return p
}

// await reads lines until one satisfies match.
func (p *peer) await(t *testing.T, what string, match func(string) bool) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("Java peer exited before %s", what)
			}
			if match(l) {
				return l
			}
		case <-timeout:
			t.Fatalf("Java peer: no %s within 60s", what)
		}
	}
}

// counterFixture is what the lock interop tests share: two Go clients, a lock
// path and a counter node at 0 beside it.
func counterFixture(t *testing.T) (clients []*zklock.Client, lockPath, counter string) {
	return counterFixtureAs(t, "")
}

// counterFixtureAs is counterFixture with clients of the digest identity
// ("" : none).
func counterFixtureAs(t *testing.T, digest string) (clients []*zklock.Client, lockPath, counter string) {
	if digest == "" {
		clients = []*zklock.Client{connect(t), connect(t)}
	} else {
		clients = []*zklock.Client{connectAs(t, digest), connectAs(t, digest)}
	}
	base := e2e.Path(t)
	e2e.CreateNode(t, clients[0].Conn(), base, nil)
	e2e.CreateNode(t, clients[0].Conn(), base+"/counter", []byte("0"))
	return clients, base + "/lock", base + "/counter"
}

func TestInteropMutexWithJavaCurator(t *testing.T) {
	interopMutex(t, "")
}

// With zookeeper.auth: Go and Java authenticate as one digest identity and
// create their nodes with the same ACL; they share the lock as before, and
// a client without the identity cannot queue on it.
func TestInteropMutexWithJavaCuratorUnderACL(t *testing.T) {
	interopMutex(t, e2e.ZKDigest)
}

func interopMutex(t *testing.T, digest string) {
	java, ctx := javaPeer(t), testCtx(t)
	clients, lockPath, counter := counterFixtureAs(t, digest)

	const javaRounds, goWorkers, goRounds = 60, 4, 15
	var env []string
	if digest != "" {
		env = []string{"ZK_DIGEST=" + digest}
	}
	p := startPeerWith(t, env, append(java, "mutex", lockPath, counter, strconv.Itoa(javaRounds))...)
	var javaSaw []string
	javaSaw = append(javaSaw, p.await(t, "first acquisition", func(l string) bool { return strings.HasPrefix(l, "participants ") }))
	if digest != "" {
		// The lock node exists now, made by Java's Curator with its ACL.
		outsider, _, err := gozk.Connect(e2e.ZooKeeper(t), 10*time.Second, gozk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		_, err = outsider.Create(lockPath+"/_c_outsider-lock-", nil, gozk.FlagEphemeralSequential, gozk.WorldACL(gozk.PermAll))
		outsider.Close()
		if !errors.Is(err, gozk.ErrNoAuth) {
			t.Errorf("a client without the identity queues on the lock Java made: %v, want NoAuth", err)
		}
	}

	var mu sync.Mutex
	var goNodes, goSaw []string
	var wg sync.WaitGroup
	for w := range goWorkers {
		wg.Go(func() {
			c := clients[w%2]
			m := zklock.NewMutex(c, lockPath)
			for range goRounds {
				if err := m.Acquire(ctx); err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				nodes, err := m.ParticipantNodes(ctx)
				if err != nil {
					t.Errorf("participants: %v", err)
				}
				mu.Lock()
				goNodes = append(goNodes, m.Node())
				goSaw = append(goSaw, nodes...)
				mu.Unlock()
				data, _, err := c.Conn().Get(counter)
				if err != nil {
					t.Errorf("get: %v", err)
				}
				v, _ := strconv.Atoi(string(data)) // a bad value fails the final count
				time.Sleep(2 * time.Millisecond)
				if _, err := c.Conn().Set(counter, []byte(strconv.Itoa(v+1)), -1); err != nil {
					t.Errorf("set: %v", err)
				}
				if err := m.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		})
	}
	wg.Wait()
	// Hand-offs between Go handles of one session skip the second listing
	// (handoff.go) while Java nodes queue among them; the count says how
	// often that happened in this run.
	t.Logf("Go hand-offs taken without listing again: %d", clients[0].Stats().Shortcuts+clients[1].Stats().Shortcuts)
	for l := range p.lines {
		if strings.HasPrefix(l, "participants ") {
			javaSaw = append(javaSaw, l)
		}
	}
	e2e.Receive(t, p.done, 60*time.Second, "the Java peer's exit")
	if p.err != nil {
		t.Fatalf("Java peer: %v", p.err)
	}

	data, _, err := clients[0].Conn().Get(counter)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(javaRounds + goWorkers*goRounds); string(data) != want {
		t.Fatalf("counter = %s, want %s: an update was lost, so Go and Java held the lock together", data, want)
	}
	javaSawGo := false
	for _, l := range javaSaw {
		for _, n := range strings.Split(strings.TrimPrefix(l, "participants "), ",") {
			javaSawGo = javaSawGo || slices.Contains(goNodes, n)
		}
	}
	goSawJava := false
	for _, n := range goSaw {
		goSawJava = goSawJava || !slices.Contains(goNodes, n)
	}
	if !javaSawGo || !goSawJava {
		t.Fatalf("queue not shared: Java saw a Go node: %v, Go saw a Java node: %v", javaSawGo, goSawJava)
	}
	if kids := children(t, clients[0], lockPath); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}
}

func TestInteropLeaderLatchWithJavaCurator(t *testing.T) {
	java := javaPeer(t)
	ctx := testCtx(t)
	path := e2e.Path(t)
	goLatch := zklock.NewLeaderLatch(connect(t), path, "go")
	if err := goLatch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := goLatch.Await(ctx); err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, append(java, "latch", path, "java")...)
	p.await(t, "start", func(l string) bool { return l == "started" })
	waitFor(t, func() bool {
		ids, err := goLatch.Participants(ctx)
		return err == nil && slices.Equal(ids, []string{"go", "java"})
	})
	if !goLatch.HasLeadership() {
		t.Fatal("Go lost leadership when Java joined behind it")
	}
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := goLatch.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if l := p.await(t, "leadership", func(l string) bool { return l == "leader" || l == "notleader" }); l != "leader" {
		t.Fatalf("Java said %q before leading: it thought it led while Go did", l)
	}
	// And back: Java leads, a new Go latch queues behind it.
	again := zklock.NewLeaderLatch(connect(t), path, "go2")
	if err := again.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		ids, err := again.Participants(ctx)
		return err == nil && slices.Equal(ids, []string{"java", "go2"})
	})
	if again.HasLeadership() {
		t.Fatal("Go leads while Java does")
	}
	p.stdin.Close()
	p.await(t, "close", func(l string) bool { return l == "closed" })
	if err := again.Await(ctx); err != nil {
		t.Fatal(err)
	}
	if err := again.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// drain reads the peer's remaining lines until it exits, and fails the test
// if it exited with an error or said a line that bad matches.
func (p *peer) drain(t *testing.T, bad func(string) bool) []string {
	t.Helper()
	var lines []string
	for l := range p.lines {
		if bad(l) {
			t.Errorf("Java peer: %s", l)
		}
		lines = append(lines, l)
	}
	e2e.Receive(t, p.done, 60*time.Second, "the Java peer's exit")
	if p.err != nil {
		t.Fatalf("Java peer: %v", p.err)
	}
	return lines
}

// Go and Java readers and writers on one read/write lock: no write is lost
// (writers exclude each other) and no reader sees the value change while it
// reads (writers exclude readers), on either side.
func TestInteropReadWriteLockWithJavaCurator(t *testing.T) {
	java, ctx := javaPeer(t), testCtx(t)
	clients, lockPath, counter := counterFixture(t)
	const javaRounds, goWorkers, goRounds = 45, 4, 15
	p := startPeer(t, append(java, "rwlock", lockPath, counter, strconv.Itoa(javaRounds))...)
	p.await(t, "start", func(l string) bool { return l == "started" })
	read := func(c *zklock.Client) int {
		data, _, err := c.Conn().Get(counter)
		if err != nil {
			t.Errorf("get: %v", err)
		}
		v, _ := strconv.Atoi(string(data)) // a bad value fails the final count
		return v
	}
	var goWrites atomic.Int32
	var wg sync.WaitGroup
	for w := range goWorkers {
		wg.Go(func() {
			c := clients[w%2]
			rw := zklock.NewReadWriteLock(c, lockPath)
			for i := range goRounds {
				if i%3 == 2 {
					if err := rw.ReadLock().Acquire(ctx); err != nil {
						t.Errorf("read lock: %v", err)
						return
					}
					a := read(c)
					time.Sleep(2 * time.Millisecond)
					if b := read(c); a != b {
						t.Errorf("Go reader saw the counter go from %d to %d under the read lock", a, b)
					}
					release(t, rw.ReadLock())
					continue
				}
				if err := rw.WriteLock().Acquire(ctx); err != nil {
					t.Errorf("write lock: %v", err)
					return
				}
				v := read(c)
				time.Sleep(2 * time.Millisecond)
				if _, err := c.Conn().Set(counter, []byte(strconv.Itoa(v+1)), -1); err != nil {
					t.Errorf("set: %v", err)
				}
				goWrites.Add(1)
				release(t, rw.WriteLock())
			}
		})
	}
	wg.Wait()
	javaWrites := -1
	for _, l := range p.drain(t, func(l string) bool { return strings.HasPrefix(l, "torn ") }) {
		if n, ok := strings.CutPrefix(l, "writes "); ok {
			javaWrites, _ = strconv.Atoi(n)
		}
	}
	if javaWrites < 0 {
		t.Fatal("the Java peer did not say how many writes it made")
	}
	if got, want := read(clients[0]), javaWrites+int(goWrites.Load()); got != want {
		t.Fatalf("counter = %d, want %d (%d Java + %d Go writes): a write was lost, so two writers held the lock together", got, want, javaWrites, goWrites.Load())
	}
	if kids := children(t, clients[0], lockPath); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}
}

// Go and Java take leases of one SemaphoreV2 whose size is a SharedCount
// (set by Go, read by Java): never more holders than leases, on either side.
func TestInteropSemaphoreWithSharedCountWithJavaCurator(t *testing.T) {
	java := javaPeer(t)
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	base := e2e.Path(t)
	semPath, countPath, inside := base+"/sem", base+"/count", base+"/inside"
	e2e.CreateNode(t, clients[0].Conn(), base, nil)
	e2e.CreateNode(t, clients[0].Conn(), inside, nil)
	const leases = 2
	count := zklock.NewSharedCount(clients[0], countPath, leases)
	if err := count.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer count.Close()
	const javaRounds, goWorkers, goRounds = 40, 3, 12
	p := startPeer(t, append(java, "semaphore", semPath, countPath, inside, strconv.Itoa(javaRounds))...)
	if l := p.await(t, "the lease count", func(l string) bool { return strings.HasPrefix(l, "max ") }); l != "max "+strconv.Itoa(leases) {
		t.Fatalf("Java read %q from the SharedCount Go made, want max %d", l, leases)
	}
	var maxInside atomic.Int32
	var wg sync.WaitGroup
	for w := range goWorkers {
		wg.Go(func() {
			c := clients[w%2]
			sem := zklock.NewSemaphoreV2WithCount(c, semPath, count)
			for range goRounds {
				lease, err := sem.Acquire(ctx)
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				me, err := c.Conn().Create(inside+"/in-", nil, gozk.FlagEphemeralSequential, gozk.WorldACL(gozk.PermAll))
				if err != nil {
					t.Errorf("inside: %v", err)
				}
				kids, _, err := c.Conn().Children(inside)
				if err != nil {
					t.Errorf("inside: %v", err)
				}
				if n := int32(len(kids)); n > maxInside.Load() {
					maxInside.Store(n)
				}
				if len(kids) > leases {
					t.Errorf("%d holders inside, with %d leases", len(kids), leases)
				}
				time.Sleep(3 * time.Millisecond)
				if err := c.Conn().Delete(me, -1); err != nil {
					t.Errorf("leave: %v", err)
				}
				if err := lease.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		})
	}
	wg.Wait()
	p.drain(t, func(l string) bool { return strings.HasPrefix(l, "over ") })
	t.Logf("at most %d holders inside at once on the Go side", maxInside.Load())
	if kids := children(t, clients[0], semPath+"/leases"); len(kids) != 0 {
		t.Fatalf("leases left: %v", kids)
	}
}

// Go and Java selectors take turns leading on one path: each term holds an
// ephemeral marker node, which a second leader at the same time could not
// create. Both sides lead, and no term finds the marker taken.
func TestInteropLeaderSelectorWithJavaCurator(t *testing.T) {
	java := javaPeer(t)
	base := e2e.Path(t)
	leaderPath, marker := base+"/leader", base+"/marker"
	c := connect(t)
	e2e.CreateNode(t, c.Conn(), base, nil)
	e2e.CreateNode(t, c.Conn(), marker+"-log", nil)
	const javaTerms, goTerms = 15, 15
	p := startPeer(t, append(java, "selector", leaderPath, marker, strconv.Itoa(javaTerms), "java")...)
	p.await(t, "start", func(l string) bool { return l == "started" })
	var terms atomic.Int32
	enough := make(chan struct{})
	var once sync.Once
	sel := zklock.NewLeaderSelector(c, leaderPath, "go", func(ctx context.Context) error {
		if _, err := c.Conn().Create(marker, nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Errorf("Go's term could not take the marker (another leader?): %v", err)
			return nil
		}
		if _, err := c.Conn().Create(marker+"-log/t-", []byte("go"), gozk.FlagSequence, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Errorf("term log: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
		if err := c.Conn().Delete(marker, -1); err != nil {
			t.Errorf("marker: %v", err)
		}
		if terms.Add(1) >= goTerms {
			once.Do(func() { close(enough) })
		}
		return nil
	})
	sel.AutoRequeue()
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	e2e.Receive(t, enough, 60*time.Second, "Go's terms")
	lines := p.drain(t, func(l string) bool { return l == "overlap" })
	sel.Close()
	if !slices.Contains(lines, "terms "+strconv.Itoa(javaTerms)) {
		t.Fatalf("Java said %v, want its %d terms", lines, javaTerms)
	}
	// The log of terms, in order: Go and Java took turns, not one after the other.
	logged := children(t, c, marker+"-log")
	slices.Sort(logged)
	var who []string
	for _, n := range logged {
		data, _, err := c.Conn().Get(marker + "-log/" + n)
		if err != nil {
			t.Fatal(err)
		}
		who = append(who, string(data))
	}
	switches := 0
	for i := 1; i < len(who); i++ {
		if who[i] != who[i-1] {
			switches++
		}
	}
	if switches < 2 {
		t.Fatalf("terms %v: Go and Java did not take turns", who)
	}
}
