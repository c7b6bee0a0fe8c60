package e2e

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// kubelet runs a rendered pod's containers on this machine as a kubelet
// would, without one: each container's command is the image's entrypoint
// (the Dockerfile's, its /shop being the shop binary built here) with the
// container's args; its environment is the image's ENV, then the
// container's env (values, the pod's name and namespace, resource limits);
// its volumes are the rendered ConfigMap's and Secret's keys as files (the
// Secret's, those its items list, root's with group fsGroup and the
// volume's mode); its processes run as the pod's runAsUser, runAsGroup and
// fsGroup (so the tests run as root). The one liberty: a mount path is a
// directory of the test's, and a path under a mount path in an env value,
// an arg or a ConfigMap file is rewritten to it.
type kubelet struct {
	t       *testing.T
	img     image
	objs    []object
	podName string
}

// container is one prepared container: its command and environment.
type container struct {
	name string
	args []string
	env  []string
	dir  string // the working directory: the image's / (empty)
	// cred: the pod's runAsUser, runAsGroup and fsGroup (nil: the test's
	// own user)
	cred *syscall.Credential
}

// prepare lays out c's volumes of pod under a directory of the test's and
// returns the command that runs it.
func (k kubelet) prepare(pod corev1.PodSpec, c corev1.Container) container {
	t := k.t
	t.Helper()
	root := t.TempDir()
	// The pod's user, as a kubelet runs it: its uid, its group, fsGroup as
	// a supplementary group; the Secret's files are root's, group fsGroup.
	var cred *syscall.Credential
	fsGroup := -1
	if sc := pod.SecurityContext; sc != nil && sc.RunAsUser != nil {
		if os.Geteuid() != 0 {
			t.Fatalf("the pod runs as user %d: this kubelet must run as root to run it so, and to make its Secret's files root's, as a kubelet does (run the tests as root)", *sc.RunAsUser)
		}
		cred = &syscall.Credential{Uid: uint32(*sc.RunAsUser), Gid: uint32(*sc.RunAsUser)}
		if sc.RunAsGroup != nil {
			cred.Gid = uint32(*sc.RunAsGroup)
		}
		if sc.FSGroup != nil {
			fsGroup = int(*sc.FSGroup)
			cred.Groups = []uint32{uint32(fsGroup)}
		}
		openPath(t, root) // the pod's user walks the test's directories, as a pod's mounts
	}
	mounts := map[string]string{} // the container's path → the test's
	var order []string
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			t.Fatalf("container %s mounts %s: no such volume", c.Name, m.Name)
		}
		host := filepath.Join(root, "volumes", m.Name)
		if m.SubPath != "" {
			host = filepath.Join(host, m.SubPath)
		}
		mounts[m.MountPath] = host
		order = append(order, m.MountPath)
	}
	// Longest first: /etc/seckill/secrets before /etc/seckill/config.yaml's parent.
	slices.SortFunc(order, func(a, b string) int { return len(b) - len(a) })
	rewrite := func(s string) string {
		for _, p := range order {
			s = strings.ReplaceAll(s, p, mounts[p])
		}
		return s
	}
	for _, v := range pod.Volumes {
		dir := filepath.Join(root, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.ConfigMap != nil:
			cm, ok := find[*corev1.ConfigMap](k.objs, "ConfigMap", v.ConfigMap.Name)
			if !ok {
				t.Fatalf("volume %s: no ConfigMap %s rendered", v.Name, v.ConfigMap.Name)
			}
			for key, data := range cm.Data {
				writeFile(t, filepath.Join(dir, key), rewrite(data), 0o644)
			}
		case v.Secret != nil:
			sec, ok := find[*corev1.Secret](k.objs, "Secret", v.Secret.SecretName)
			if !ok {
				t.Fatalf("volume %s: no Secret %s rendered", v.Name, v.Secret.SecretName)
			}
			mode := os.FileMode(0o644)
			if v.Secret.DefaultMode != nil {
				mode = os.FileMode(*v.Secret.DefaultMode)
			}
			all := map[string]string{}
			for key, data := range sec.StringData {
				all[key] = data
			}
			for key, data := range sec.Data {
				all[key] = string(data)
			}
			// items: only the keys listed, at their paths (a key listed
			// that the Secret lacks stops the pod, as a kubelet's mount).
			files := all
			if len(v.Secret.Items) > 0 {
				files = map[string]string{}
				for _, it := range v.Secret.Items {
					data, ok := all[it.Key]
					if !ok {
						t.Fatalf("volume %s: the Secret %s has no key %s", v.Name, sec.Name, it.Key)
					}
					files[it.Path] = data
				}
			}
			for name, data := range files {
				f := filepath.Join(dir, name)
				writeFile(t, f, data, mode)
				if cred != nil { // root's, group fsGroup (or root's), the volume's mode
					if err := os.Chown(f, 0, max(fsGroup, 0)); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(f, mode); err != nil {
						t.Fatal(err)
					}
				}
			}
		default:
			t.Fatalf("volume %s: a kind this kubelet does not make", v.Name)
		}
	}
	if cred != nil { // a volume's directories may be walked by anyone; its files keep their modes
		err := filepath.WalkDir(filepath.Join(root, "volumes"), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				err = os.Chmod(p, 0o755)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	env := map[string]string{"HOSTNAME": k.podName}
	for name, v := range k.img.env {
		env[name] = v
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = rewrite(e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = k.podName
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = "shop"
		case e.ValueFrom.ResourceFieldRef != nil:
			q, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(e.ValueFrom.ResourceFieldRef.Resource, "limits."))]
			if !ok {
				t.Fatalf("env %s: %s is not set", e.Name, e.ValueFrom.ResourceFieldRef.Resource)
			}
			env[e.Name] = fmt.Sprint(q.Value())
		default:
			t.Fatalf("env %s: a source this kubelet does not know", e.Name)
		}
	}
	if len(c.Command) > 0 {
		t.Fatalf("container %s overrides the image's entrypoint: this kubelet runs only the shop's", c.Name)
	}
	if !slices.Equal(k.img.entrypoint, []string{"/shop"}) {
		t.Fatalf("the image's entrypoint %v is not /shop", k.img.entrypoint)
	}
	out := container{name: c.Name, dir: t.TempDir(), cred: cred}
	bin := e2e.ShopBinary(t)
	if cred != nil {
		openPath(t, out.dir)
		bin = copyBinary(t, bin) // the test's build directory is root's alone
	}
	out.args = append([]string{bin}, c.Args...)
	for i := range out.args[1:] {
		out.args[i+1] = rewrite(out.args[i+1])
	}
	for name, v := range env {
		out.env = append(out.env, name+"="+v)
	}
	return out
}

// openPath lets every user walk dir and its ancestors (their mode gains
// o+x, and r on dir's own subtree), as a pod's user walks its mounts.
func openPath(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, st.Mode().Perm()|0o055); err != nil {
			t.Fatal(err)
		}
	}
}

// copyBinary copies the binary at bin into a directory every user may
// read, once per test.
func copyBinary(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	openPath(t, dir)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(bin))
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.WriteFile(out, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// running is a started container.
type running struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan error
}

// start starts c; the test's end kills it if it still runs.
func (c container) start(t *testing.T) *running {
	t.Helper()
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Env, cmd.Dir = c.env, c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	r := &running{cmd: cmd, out: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// wait is the container's exit within d ("still running" when it did not end).
func (r *running) wait(d time.Duration) (exited bool, err error) {
	select {
	case err := <-r.done:
		r.done <- err
		return true, err
	case <-time.After(d):
		return false, nil
	}
}

// probe runs an HTTP probe as the kubelet does: every periodSeconds, up to
// failureThreshold failures; nil once it succeeds.
func probe(c corev1.Container, p *corev1.Probe) error {
	port := p.HTTPGet.Port
	if port.Type == intstr.String {
		i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port.StrVal })
		if i < 0 {
			return fmt.Errorf("no port named %s", port.StrVal)
		}
		port = intstr.FromInt32(c.Ports[i].ContainerPort)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port.IntVal, p.HTTPGet.Path)
	// Kubernetes' defaults for what the probe leaves unset.
	timeout := time.Duration(cmp.Or(p.TimeoutSeconds, 1)) * time.Second
	period := time.Duration(cmp.Or(p.PeriodSeconds, 10)) * time.Second
	failures := cmp.Or(p.FailureThreshold, 3)
	client := &http.Client{Timeout: timeout}
	var last error
	for range failures {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 400 {
				return nil
			}
			err = fmt.Errorf("%s answered %d", url, resp.StatusCode)
		}
		last = err
		time.Sleep(period)
	}
	return fmt.Errorf("failed %d times: %v", failures, last)
}

// TestTheShopStartsAsTheChartsDeploymentSays renders the chart for an
// external database and ZooKeeper (this machine's: a database and lock
// paths of the test's own), then does what a kubelet would with the
// rendered objects: the migration Job's container and the Deployment's pod
// — its init container waits until the Job has migrated, its shop passes
// the startup, liveness and readiness probes on the declared port and
// path, sells 20 pieces to 60 buyers exactly (the stock set as `kubectl
// exec` would: the container's command line, env and files), and, told to
// stop after the preStop pause, exits 0 within the grace period. Then the
// same pod with a config.yaml holding a key the shop does not know: its
// init container stops at once, naming the key.
func TestTheShopStartsAsTheChartsDeploymentSays(t *testing.T) {
	s := e2e.NewStack(t)
	userPass, hostDB, ok := strings.Cut(s.DSN, "@")
	user, password, _ := strings.Cut(userPass, ":")
	if !ok || password == "" {
		t.Fatalf("the test database's DSN %q has no user:password@", s.DSN)
	}
	stackEnv := map[string]string{}
	for _, kv := range s.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			stackEnv[k] = v
		}
	}
	port, metricsPort := freePort(t), freePort(t)
	values := fmt.Sprintf(`
shop:
  replicas: 1
  port: %d
  metricsPort: %d
  config:
    lock: {path: %q}
    leader: {path: %q}
    allot: {path: %q}
    zookeeper: {namespace: %q}
zookeeper: {enabled: false, servers: [%q]}
mariadb: {operator: false, dsn: %q}
secrets: {mysqlPassword: %q, zookeeperAuth: %q}
`, port, metricsPort, s.LockPath, stackEnv["SHOP_LEADER_PATH"], stackEnv["SHOP_ALLOT_PATH"], e2e.Path(t), strings.Join(s.ZKServers, ","), user+"@"+hostDB, password,
		"digest:"+e2e.ZKDigest)
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	img, known := shopImage(t), knownKeys(t)
	if p := checkChart(objs, img, known); len(p) > 0 {
		t.Fatalf("the rendered chart: %v", p)
	}
	d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
	job, ok := find[*batchv1.Job](objs, "Job", "")
	if !ok {
		t.Fatal("no migration Job")
	}
	pod := d.Spec.Template.Spec
	k := kubelet{t: t, img: img, objs: objs, podName: d.Name + "-5d8c7b9f6-x7k2p"}

	// The instance's init container waits for the schema the Job makes.
	if len(pod.InitContainers) != 1 {
		t.Fatalf("the pod's init containers: %d, want the one that waits for the schema", len(pod.InitContainers))
	}
	waiting := k.prepare(pod, pod.InitContainers[0]).start(t)
	if exited, err := waiting.wait(3 * time.Second); exited {
		t.Fatalf("the init container ended (%v) before the schema was made:\n%s", err, waiting.out)
	}
	jk := kubelet{t: t, img: img, objs: objs, podName: job.Name + "-q4w9z"}
	migrate := jk.prepare(job.Spec.Template.Spec, job.Spec.Template.Spec.Containers[0]).start(t)
	if exited, err := migrate.wait(2 * time.Minute); !exited || err != nil {
		t.Fatalf("the migration Job's container: exited %t, %v\n%s", exited, err, migrate.out)
	}
	if exited, err := waiting.wait(30 * time.Second); !exited || err != nil {
		t.Fatalf("the init container after the migration: exited %t, %v\n%s", exited, err, waiting.out)
	}

	c := pod.Containers[0]
	shop := k.prepare(pod, c)
	serving := shop.start(t)
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"startup", c.StartupProbe}, {"liveness", c.LivenessProbe}, {"readiness", c.ReadinessProbe}} {
		if err := probe(c, p.probe); err != nil {
			t.Fatalf("the %s probe: %v\n%s", p.name, err, serving.out)
		}
	}

	// /metrics on its own port (the one the NetworkPolicy opens to the
	// scraper alone), not on the API's.
	if a := e2e.Ask(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port)); a.Status != http.StatusNotFound {
		t.Errorf("/metrics on the API's port: %d, want 404", a.Status)
	}
	if a := e2e.Ask(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)); a.Status != http.StatusOK || !strings.Contains(string(a.Body), "seckill_") {
		t.Errorf("/metrics on the metrics port: %d, want 200 with the shop's metrics", a.Status)
	}

	// A short sale: kubectl exec's stock set, then 50 buyers for 20 pieces
	// (from one address: the chart's limits.clientBurst, 50, lets them in).
	exec := shop
	exec.args = []string{shop.args[0], "stock", "set", "--goods", "1", "--stock", "20", "--clear-orders"}
	if out, err := runContainer(exec); err != nil {
		t.Fatalf("shop stock set in the container: %v\n%s", err, out)
	}
	outcome := e2e.Buy(t, []string{fmt.Sprintf("http://127.0.0.1:%d", port)}, 50)
	if outcome.Status[http.StatusOK] != 20 || outcome.Status[http.StatusConflict] != 30 {
		t.Errorf("50 buyers for 20 pieces: %v, want 20 200s and 30 409s", outcome.Status)
	}
	if stock, orders := s.Counts(t); stock != 0 || orders != 20 {
		t.Errorf("stock %d with %d order rows, want 0 and 20", stock, orders)
	}

	// Stopping: the preStop pause, then SIGTERM; the shop must be gone
	// within the rest of the grace period, with exit status 0.
	pause := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	time.Sleep(pause)
	if err := serving.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest := time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second - pause
	if exited, err := serving.wait(rest); !exited || err != nil {
		t.Fatalf("after SIGTERM, within %v: exited %t, %v\n%s", rest, exited, err, serving.out)
	}

	// The same pod with a key the shop does not know never starts: its
	// first container stops at once and names the key.
	cm, _ := find[*corev1.ConfigMap](objs, "ConfigMap", "sale-seckill-config")
	cm.Data["config.yaml"] += "lock2:\n  pathh: /x\n"
	bad := k.prepare(pod, pod.InitContainers[0]).start(t)
	if exited, err := bad.wait(30 * time.Second); !exited || err == nil || !strings.Contains(bad.out.String(), "lock2") {
		t.Errorf("with an unknown key: exited %t, %v, want a failure naming lock2\n%s", exited, err, bad.out)
	}
}

// runContainer runs a prepared container to its end (60 s at most).
func runContainer(c container) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.args[0], c.args[1:]...)
	cmd.Env, cmd.Dir = c.env, c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd.CombinedOutput()
}

// freePort is a TCP port free on every interface now (the shop binds
// 0.0.0.0, as in a pod).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
