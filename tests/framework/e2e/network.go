package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Network is a network of the test's own, for faults a proxy cannot make:
// hosts that are Linux network namespaces, each with one veth link to a
// bridge in a namespace of its own, on a /24 of 10.77.0.0/16; the test's
// process reaches every host through a link of the root namespace (the
// gateway, .1). A host runs the servers and instances a test starts in it
// (Host.Command) on its own address, and its nftables drop what a fault
// says: a partition is packets dropped, not a connection closed — no RST,
// TCP retransmitting, each side's timeouts deciding — one way or both,
// and loss is nftables' random drop (this kernel has no netem: delay
// goes through the harness's proxies). Every rule lives in a host's own
// namespace; the root namespace's firewall is never touched.
//
// It needs root (CAP_NET_ADMIN), iproute2 and nftables: scripts/stack.sh
// up installs them. Everything is deleted at cleanup, and a network left
// by a test process that died is deleted by the next one's NewNetwork.
type Network struct {
	t      testing.TB
	id     string // in every name: skz-<pid>-<id>-...
	subnet int    // 10.77.<subnet>.0/24
	sw     string // the bridge's namespace
	rootIf string // the gateway's link in the root namespace

	mu    sync.Mutex
	hosts []*Host
}

// Host is one machine of a Network.
type Host struct {
	Name string // the test's name for it
	NS   string // its network namespace
	IP   string
	net  *Network
	// The host's drops: a peer's address it sends nothing to, one it
	// hears nothing from, and the share of every packet lost.
	sendTo, hearFrom map[string]bool
	loss             int
}

const netnsPrefix = "skz-"

// NewNetwork makes a network of the test's own, deleted at cleanup.
func NewNetwork(t testing.TB) *Network {
	t.Helper()
	Integration(t)
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: the partition tests need iproute2 and nftables (`make stack-up` installs them: scripts/stack.sh up)", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("the partition tests make network namespaces and need root (CAP_NET_ADMIN)")
	}
	// One network at a time takes a subnet, in this test process and the
	// others alike: each flock opens the file anew, so it excludes both.
	unlock := lockFile(t, "/tmp/seckill-netns.lock")
	defer unlock()
	removeDeadNetworks(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	n := &Network{t: t, id: hex.EncodeToString(b), subnet: freeSubnet(t)}
	n.sw = fmt.Sprintf("%s%d-%s-sw", netnsPrefix, os.Getpid(), n.id)
	n.rootIf = "skz" + n.id + "gw"
	t.Cleanup(n.remove)
	n.run("ip", "netns", "add", n.sw)
	n.run("ip", "-n", n.sw, "link", "add", "br0", "type", "bridge")
	n.run("ip", "-n", n.sw, "link", "set", "br0", "up")
	n.run("ip", "link", "add", n.rootIf, "type", "veth", "peer", "name", "gw", "netns", n.sw)
	n.run("ip", "-n", n.sw, "link", "set", "gw", "master", "br0", "up")
	n.run("ip", "addr", "add", n.addr(1)+"/24", "dev", n.rootIf)
	n.run("ip", "link", "set", n.rootIf, "up")
	return n
}

// Gateway is the address of the test's own process on the network: what
// a host dials to reach a proxy the test runs.
func (n *Network) Gateway() string { return n.addr(1) }

func (n *Network) addr(k int) string { return fmt.Sprintf("10.77.%d.%d", n.subnet, k) }

// Host adds a host named name (a letter or digit or two: it is part of
// the namespace's name) and returns it, its link up.
func (n *Network) Host(name string) *Host {
	n.t.Helper()
	n.mu.Lock()
	k := len(n.hosts) + 11
	h := &Host{Name: name, NS: fmt.Sprintf("%s%d-%s-%s", netnsPrefix, os.Getpid(), n.id, name), IP: n.addr(k), net: n,
		sendTo: map[string]bool{}, hearFrom: map[string]bool{}}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	port := fmt.Sprintf("h%d", k)
	n.run("ip", "netns", "add", h.NS)
	n.run("ip", "-n", h.NS, "link", "set", "lo", "up")
	n.run("ip", "-n", h.NS, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", n.sw)
	n.run("ip", "-n", n.sw, "link", "set", port, "master", "br0", "up")
	n.run("ip", "-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
	n.run("ip", "-n", h.NS, "link", "set", "eth0", "up")
	h.apply()
	return h
}

// hostsEnv is the environment of scripts/stack.sh that starts node n of a
// cluster in hosts[n-1] (STACK_HOSTS); nil hosts: the test's own.
func hostsEnv(hosts []*Host) []string {
	env := os.Environ()
	if hosts == nil {
		return env
	}
	var spec []string
	for _, h := range hosts {
		spec = append(spec, h.NS+"="+h.IP)
	}
	return append(env, "STACK_HOSTS="+strings.Join(spec, " "))
}

// Command is prog with args, to run in the host's namespace: its PID is
// prog's own (ip netns exec execs it), for SIGKILL and SIGSTOP.
func (h *Host) Command(prog string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS, prog}, args...)...)
}

// Addr is the host's address with port.
func (h *Host) Addr(port int) string { return h.IP + ":" + strconv.Itoa(port) }

// Cut drops every packet between a and b, both ways, until Heal.
func (n *Network) Cut(a, b *Host) {
	n.CutOneWay(a, b)
	n.CutOneWay(b, a)
}

// CutOneWay drops every packet from sends to to: to hears nothing from
// from, while what to sends still arrives. A TCP connection between them
// then stalls both ways (its acknowledgements are lost), but a datagram
// or a connection's first packet from to still lands.
func (n *Network) CutOneWay(from, to *Host) {
	n.mu.Lock()
	from.sendTo[to.IP] = true
	to.hearFrom[from.IP] = true
	n.mu.Unlock()
	from.apply()
	to.apply()
}

// CutFromGateway drops every packet between h and the test's own process
// (its proxies), both ways.
func (n *Network) CutFromGateway(h *Host) {
	n.mu.Lock()
	h.sendTo[n.Gateway()], h.hearFrom[n.Gateway()] = true, true
	n.mu.Unlock()
	h.apply()
}

// Loss drops percent of the packets on every link, each direction, at
// random, until Heal: a host drops that share of what it receives, and of
// what it sends to the test's process (whose namespace has no rules).
func (n *Network) Loss(percent int) {
	n.mu.Lock()
	hosts := append([]*Host{}, n.hosts...)
	for _, h := range hosts {
		h.loss = percent
	}
	n.mu.Unlock()
	for _, h := range hosts {
		h.apply()
	}
}

// Heal ends every cut and the loss.
func (n *Network) Heal() {
	n.mu.Lock()
	hosts := append([]*Host{}, n.hosts...)
	for _, h := range hosts {
		h.sendTo, h.hearFrom, h.loss = map[string]bool{}, map[string]bool{}, 0
	}
	n.mu.Unlock()
	for _, h := range hosts {
		h.apply()
	}
}

// apply replaces the host's nftables table with its drops, in one
// transaction of nft's.
func (h *Host) apply() {
	h.net.mu.Lock()
	var b strings.Builder
	b.WriteString("table inet nemesis\ndelete table inet nemesis\ntable inet nemesis {\n")
	rules := func(chain, hook, dir string, addrs map[string]bool, lossTo string) {
		fmt.Fprintf(&b, " chain %s {\n  type filter hook %s priority 0; policy accept;\n", chain, hook)
		for a := range addrs {
			fmt.Fprintf(&b, "  ip %s %s drop\n", dir, a)
		}
		if h.loss > 0 {
			fmt.Fprintf(&b, "  ip saddr 10.77.0.0/16 ip daddr %s numgen random mod 1000 < %d drop\n", lossTo, h.loss*10)
		}
		b.WriteString(" }\n")
	}
	rules("input", "input", "saddr", h.hearFrom, "10.77.0.0/16")
	rules("output", "output", "daddr", h.sendTo, h.net.Gateway())
	b.WriteString("}\n")
	h.net.mu.Unlock()
	cmd := exec.Command("ip", "netns", "exec", h.NS, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		h.net.t.Fatalf("nft in %s: %v\n%s\n%s", h.NS, err, out, b.String())
	}
}

func (n *Network) run(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// remove kills what still runs in the hosts and deletes every namespace
// and the gateway's link.
func (n *Network) remove() {
	n.mu.Lock()
	names := []string{n.sw}
	for _, h := range n.hosts {
		names = append(names, h.NS)
	}
	n.mu.Unlock()
	for _, ns := range names {
		if err := deleteNamespace(ns); err != nil {
			n.t.Errorf("delete network namespace %s: %v", ns, err)
		}
	}
	_ = exec.Command("ip", "link", "del", n.rootIf).Run() // gone with its peer, usually
}

// deleteNamespace SIGKILLs every process in ns and deletes it.
func deleteNamespace(ns string) error {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

var netnsName = regexp.MustCompile(`^` + netnsPrefix + `(\d+)-`)

// removeDeadNetworks deletes the namespaces of test processes that are
// gone (killed before their cleanup ran).
func removeDeadNetworks(t testing.TB) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name := f[0]
		m := netnsName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if syscall.Kill(pid, 0) == nil {
			continue // its test still runs
		}
		if err := deleteNamespace(name); err != nil {
			t.Logf("a dead test's network namespace %s: %v", name, err)
		}
	}
}

// freeSubnet is a /24 of 10.77.0.0/16 that no link of the root namespace
// has an address on.
func freeSubnet(t testing.TB) int {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr: %v", err)
	}
	for k := 1; k < 255; k++ {
		if !strings.Contains(string(out), fmt.Sprintf(" 10.77.%d.", k)) {
			return k
		}
	}
	t.Fatal("every subnet of 10.77.0.0/16 is taken: network namespaces of dead tests? (ip netns list)")
	return 0
}

// lockFile holds an exclusive lock on path until the returned func runs.
func lockFile(t testing.TB, path string) func() {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() { f.Close() }
}
