// Package kube starts a Kubernetes control plane of a test's own: Debian's
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler built
// from k8s.io/kubernetes (tools/kube), and kwok, whose fake nodes run no
// container: a pod scheduled on one goes Running and Ready at once, a Job's
// pod Succeeded (tests/e2e/testdata/kwok/stages.yaml). Everything it starts
// listens on loopback ports of its own, keeps its state in the test's
// temporary directory and is SIGKILLed by its PID at cleanup.
package kube

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Kubeconfig is a kubeconfig file naming it, with a token of the
	// system:masters group (for helm's --kubeconfig).
	Kubeconfig string
	// Server is the API server's URL.
	Server string
	dir    string
	token  string
	client *http.Client
	exited map[string]chan struct{} // closed when the program ends
}

// Binaries are the programs a control plane needs, as found: bin/ of root
// and etcd on the PATH; a failure names the one missing and how to get it.
func binaries(t *testing.T, root string) map[string]string {
	t.Helper()
	bins := map[string]string{}
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"} {
		p := filepath.Join(root, "bin", c)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run scripts/loadtools.sh kube (make loadtools builds the control plane from the Go module proxy, once per machine)", p)
		}
		bins[c] = p
	}
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatal("etcd is missing: run scripts/loadtools.sh kube (make loadtools installs Debian's etcd-server)")
	}
	bins["etcd"] = etcd
	return bins
}

// Start starts a control plane from the programs in root's bin/ and
// nodes fake nodes, and waits until the nodes are Ready.
func Start(t *testing.T, root string, nodes int) *ControlPlane {
	t.Helper()
	bins := binaries(t, root)
	dir, err := os.MkdirTemp("", "seckill-kube-") // short: etcd's unix sockets live under it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ports := freePorts(t, 5)
	etcdURL, peerURL := "http://127.0.0.1:"+ports[0], "http://127.0.0.1:"+ports[1]
	c := &ControlPlane{Server: "https://127.0.0.1:" + ports[2], dir: dir, token: randomHex(t, 16), exited: map[string]chan struct{}{}}
	c.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		// The API server's certificate is one it made itself at its start.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a server of the test's own on loopback
	}}
	saKey := filepath.Join(dir, "sa.key")
	writeServiceAccountKey(t, saKey, filepath.Join(dir, "sa.pub"))
	write(t, filepath.Join(dir, "tokens.csv"), c.token+",admin,admin,system:masters\n")
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	write(t, c.Kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, c.Server, c.token))

	c.start(t, "etcd", bins["etcd"], "--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL)
	c.start(t, "kube-apiserver", bins["kube-apiserver"], "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+ports[2],
		"--endpoint-reconciler-type=none", // the kubernetes Service may not name a loopback address
		"--cert-dir="+filepath.Join(dir, "certs"), "--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=Node,RBAC", "--service-cluster-ip-range=10.96.0.0/16",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"), "--service-account-signing-key-file="+saKey)
	c.waitReady(t)
	// Every controller: node lifecycle's lifts the not-ready taint the API
	// server puts on a new node once kwok reports it Ready.
	c.start(t, "kube-controller-manager", bins["kube-controller-manager"], "--kubeconfig="+c.Kubeconfig,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+ports[3], "--node-monitor-period=1s",
		"--service-account-private-key-file="+saKey, "--root-ca-file="+filepath.Join(dir, "certs", "apiserver.crt"))
	c.start(t, "kube-scheduler", bins["kube-scheduler"], "--kubeconfig="+c.Kubeconfig,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+ports[4])
	c.start(t, "kwok", bins["kwok"], "--kubeconfig="+c.Kubeconfig,
		"--config="+filepath.Join(root, "tests", "e2e", "testdata", "kwok", "stages.yaml"),
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--server-address=", "--node-ip=10.0.0.1", "--cidr=10.244.0.0/16")
	for i := range nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		c.MustDo(t, http.MethodPost, "/api/v1/nodes", map[string]any{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": name,
				"annotations": map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				"labels": map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"kubernetes.io/arch": "amd64", "type": "kwok", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)}},
		}, nil)
	}
	c.Eventually(t, 2*time.Minute, "every node Ready and schedulable", func() (bool, string) {
		var list struct {
			Items []struct {
				Metadata struct{ Name string }
				Spec     struct{ Taints []any }
				Status   struct {
					Conditions []struct{ Type, Status string }
				}
			}
		}
		c.MustDo(t, http.MethodGet, "/api/v1/nodes", nil, &list)
		ready := 0
		for _, n := range list.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == "Ready" && cond.Status == "True" && len(n.Spec.Taints) == 0 {
					ready++
				}
			}
		}
		return ready == nodes, fmt.Sprintf("%d of %d nodes Ready without taints", ready, nodes)
	})
	return c
}

// start runs a program of the control plane, its output in dir/name.log,
// SIGKILLed at cleanup.
func (c *ControlPlane) start(t *testing.T, name, bin string, args ...string) {
	t.Helper()
	logFile, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	c.exited[name] = done
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s (pid %d) still runs 30 s after SIGKILL", name, cmd.Process.Pid)
		}
		if t.Failed() {
			t.Logf("%s's last lines:\n%s", name, c.Tail(name, 15))
		}
	})
}

// Tail is the last n lines of a program's log.
func (c *ControlPlane) Tail(name string, n int) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (c *ControlPlane) waitReady(t *testing.T) {
	t.Helper()
	c.Eventually(t, 2*time.Minute, "the API server ready", func() (bool, string) {
		code, body, err := c.Do(http.MethodGet, "/readyz", nil)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("/readyz %d: %s", code, body)
	})
}

// Eventually polls cond every 200 ms until it holds, failing with its last
// word after within, or at once when a program of the control plane ended.
func (c *ControlPlane) Eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		for name, done := range c.exited {
			select {
			case <-done:
				t.Fatalf("%s: %s ended:\n%s", what, name, c.Tail(name, 15))
			default:
			}
		}
	}
	t.Fatalf("%s: not within %v: %s", what, within, last)
}

// Do sends a request to the API server: body (if not nil) as JSON. It
// returns the status and the answer's body.
func (c *ControlPlane) Do(method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.Server+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// MustDo is Do that fails the test on an error or a status of 300 or
// more, decoding the answer into out if not nil.
func (c *ControlPlane) MustDo(t *testing.T, method, path string, body, out any) {
	t.Helper()
	code, b, err := c.Do(method, path, body)
	if err != nil || code >= 300 {
		t.Fatalf("%s %s: %d %v: %s", method, path, code, err, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

func writeServiceAccountKey(t *testing.T, keyFile, pubFile string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	write(t, pubFile, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}

func write(t *testing.T, file, content string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// freePorts are n loopback ports nothing listened on a moment ago (the
// e2e framework has its own; this package may not import it).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		ports = append(ports, p)
	}
	return ports
}
