package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The Helm chart (deploy/helm/seckill), checked offline: rendered by helm
// (bin/helm, built from the Go module proxy by scripts/loadtools.sh helm),
// every object decoded strictly into the Kubernetes API's Go types (an
// unknown field or a wrong type fails), the shop's own rules checked on
// what was rendered (checkChart), and in helm_kubelet_test.go the shop
// started exactly as the rendered Deployment says. There is no API server
// here: what only a server checks (admission, a CRD's server-side schema) is
// not checked.

// chartDir is the chart, from the module root.
const chartDir = "deploy/helm/seckill"

// helmBinary is bin/helm, or a failure saying how to get it.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(e2e.Root(t), "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run scripts/loadtools.sh helm (make loadtools builds it from the Go module proxy, once per machine)", bin)
	}
	return bin
}

// object is one rendered Kubernetes object, decoded into its API type.
type object struct {
	Kind, Name string
	Obj        any
}

// kinds are the API types the chart may render; anything else fails.
var kinds = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"k8s.mariadb.com/v1alpha1/MariaDB":        func() any { return &mariaDB{} },
}

// mariaDB is the part of mariadb-operator's MariaDB resource
// (k8s.mariadb.com/v1alpha1) that the chart may write, transcribed from the
// operator's CRD (config/crd/bases/k8s.mariadb.com_mariadbs.yaml, v26.6.0):
// its field names and types. The operator's Go module is not served by the
// module proxy, so its own types cannot be used; a field the chart writes
// that is not here fails the decoding, as a field the CRD does not know
// would fail a strict apply.
type mariaDB struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Image                    string       `json:"image,omitempty"`
		RootPasswordSecretKeyRef secretKeyRef `json:"rootPasswordSecretKeyRef"`
		Username                 string       `json:"username"`
		PasswordSecretKeyRef     secretKeyRef `json:"passwordSecretKeyRef"`
		Database                 string       `json:"database"`
		Replicas                 int32        `json:"replicas"`
		Galera                   struct {
			Enabled bool `json:"enabled"`
		} `json:"galera"`
		Storage struct {
			Size             resource.Quantity `json:"size"`
			StorageClassName string            `json:"storageClassName,omitempty"`
		} `json:"storage"`
		MyCnf     string                      `json:"myCnf"`
		Resources corev1.ResourceRequirements `json:"resources"`
		Affinity  struct {
			AntiAffinityEnabled bool `json:"antiAffinityEnabled"`
		} `json:"affinity"`
		PodDisruptionBudget struct {
			MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
			MinAvailable   *intstr.IntOrString `json:"minAvailable,omitempty"`
		} `json:"podDisruptionBudget"`
	} `json:"spec"`
}

type secretKeyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Generate bool   `json:"generate,omitempty"`
}

// render runs helm lint --strict and helm template on the chart with the
// values (YAML) and helm's extra arguments, and decodes what it rendered.
func render(t *testing.T, values string, extra ...string) ([]object, error) {
	t.Helper()
	// helm -f splits at commas, which a subtest's directory may hold.
	tmp, err := os.MkdirTemp("", "seckill-helm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	file := filepath.Join(tmp, "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	helm, dir := helmBinary(t), filepath.Join(e2e.Root(t), chartDir)
	lint := exec.Command(helm, "lint", "--strict", dir, "-f", file) // lint knows no --api-versions
	if out, err := lint.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("helm lint: %v\n%s", err, out)
	}
	tmpl := exec.Command(helm, append([]string{"template", "sale", dir, "--namespace", "shop", "-f", file}, extra...)...)
	var stderr bytes.Buffer
	tmpl.Stderr = &stderr
	out, err := tmpl.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %v\n%s", err, stderr.String())
	}
	return decodeAll(out)
}

// decodeAll decodes a stream of YAML documents strictly.
func decodeAll(stream []byte) ([]object, error) {
	var objs []object
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(stream), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, fmt.Errorf("not YAML: %v\n%s", err, doc)
		}
		newObj, ok := kinds[head.APIVersion+"/"+head.Kind]
		if !ok {
			return nil, fmt.Errorf("%s %s: a kind this test does not know (%s)", head.Kind, head.Metadata.Name, head.APIVersion)
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s %s does not decode strictly into its API type: %v", head.Kind, head.Metadata.Name, err)
		}
		objs = append(objs, object{Kind: head.Kind, Name: head.Metadata.Name, Obj: obj})
	}
	return objs, nil
}

// find is the one object of kind named name (or of kind, with name "").
func find[T any](objs []object, kind, name string) (T, bool) {
	var zero T
	for _, o := range objs {
		if o.Kind == kind && (name == "" || o.Name == name) {
			if v, ok := o.Obj.(T); ok {
				return v, true
			}
		}
	}
	return zero, false
}

// TestTheHelmChartRendersValidObjects renders the chart with each value set
// a user would start from, checks the objects each must have and the
// shop's rules on them (checkChart), and checks that helm refuses values
// that would not work, with a message naming the value.
func TestTheHelmChartRendersValidObjects(t *testing.T) {
	sets := []struct {
		name, values string
		extra        []string
		want         []string // kinds and names (after the release's "sale-seckill")
	}{
		{"defaults", "", nil, []string{"Deployment", "Service", "ConfigMap -config", "ConfigMap -dashboard", "Secret -secrets",
			"Job -migrate-1", "PodDisruptionBudget", "StatefulSet -zookeeper", "Service -zookeeper-headless", "PodDisruptionBudget -zookeeper",
			"MariaDB -mariadb", "NetworkPolicy -zookeeper", "NetworkPolicy -mariadb"}},
		{"jwt, ZooKeeper auth and TLS to MySQL", `
auth: {mode: jwt}
zookeeperAuth: true
mysqlTLS: true
secrets:
  jwtHmacSecret: kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk
  zookeeperAuth: digest:shop:s3cret
  mysqlCA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
`, nil, []string{"Deployment", "Secret -secrets", "MariaDB -mariadb"}},
		{"RS256 tokens and a Secret of the user's", `
auth: {mode: jwt, jwtAlgorithm: rs256}
zookeeperAuth: true
secrets: {existingSecret: my-shop-secrets}
`, nil, []string{"Deployment", "MariaDB -mariadb"}},
		{"external ZooKeeper and database", `
zookeeper: {enabled: false, servers: ["zk1.example:2181", "zk2.example:2181", "zk3.example:2181"]}
mariadb: {operator: false, dsn: "seckill@tcp(db1.example:3306,db2.example:3306,db3.example:3306)/seckill"}
secrets: {mysqlPassword: seckill}
`, nil, []string{"Deployment", "Job -migrate-1", "Secret -secrets"}},
		{"operator Galera of 5 and the Prometheus Operator", `
mariadb: {replicas: 5, storage: {size: 50Gi, storageClassName: fast}}
shop: {replicas: 6}
`, []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"}, []string{"Deployment", "MariaDB -mariadb", "ServiceMonitor"}},
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			objs, err := render(t, set.values, set.extra...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range set.want {
				kind, suffix, _ := strings.Cut(w, " ")
				if !slices.ContainsFunc(objs, func(o object) bool { return o.Kind == kind && o.Name == "sale-seckill"+suffix }) {
					t.Errorf("no %s sale-seckill%s among the rendered objects", kind, suffix)
				}
			}
			for _, p := range checkChart(objs) {
				t.Error(p)
			}
		})
	}
	// Values that cannot work are refused when rendering, naming the value.
	for _, bad := range []struct{ values, want string }{
		{"shop: {config: {server: {shutdownTimeout: 30s}}}", "shop.shutdownTimeoutSeconds"},
		{"mariadb: {operator: false}", "mariadb.dsn"},
		{"zookeeper: {enabled: false}", "zookeeper.servers"},
		{"auth: {mode: oauth}", "auth.mode"},
		{"auth: {mode: jwt}", "secrets.jwtHmacSecret"},
		{"zookeeperAuth: true", "secrets.zookeeperAuth"},
	} {
		if _, err := render(t, bad.values); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("values %s: %v, want a refusal naming %s", bad.values, err, bad.want)
		}
	}
}

// TestTheChartChecksCatchABrokenChart: the rules checkChart holds the
// rendered chart to fail on a chart that breaks them — a probe on another
// port than the shop's, a grace period shorter than server.shutdownTimeout,
// a container that may write its root filesystem, a Service that selects
// no shop.
func TestTheChartChecksCatchABrokenChart(t *testing.T) {
	base, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if p := checkChart(base); len(p) > 0 {
		t.Fatalf("the chart as it is: %v", p)
	}
	for _, c := range []struct {
		name, want string
		breakIt    func(objs []object)
	}{
		{"a readiness probe on another port", "readinessProbe", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			d.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromInt32(8081)
		}},
		{"the container's port not the shop's", "server.addr", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 9090
		}},
		{"a grace period shorter than server.shutdownTimeout", "terminationGracePeriodSeconds", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(10))
		}},
		{"a writable root filesystem", "readOnlyRootFilesystem", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			d.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = new(false)
		}},
		{"a Service that selects no shop", "selects", func(objs []object) {
			s, _ := find[*corev1.Service](objs, "Service", "sale-seckill")
			s.Spec.Selector["app.kubernetes.io/component"] = "shopp"
		}},
		{"a secret file the Secret does not hold", "mysql-password", func(objs []object) {
			s, _ := find[*corev1.Secret](objs, "Secret", "")
			delete(s.StringData, "mysql-password")
		}},
	} {
		objs, err := render(t, "")
		if err != nil {
			t.Fatal(err)
		}
		c.breakIt(objs)
		problems := strings.Join(checkChart(objs), "\n")
		if !strings.Contains(problems, c.want) {
			t.Errorf("%s: the checks said %q, want a problem naming %s", c.name, problems, c.want)
		}
	}
}

// shopConfig is the shop's config.yaml as the chart rendered it.
func shopConfig(objs []object) (map[string]any, error) {
	cm, ok := find[*corev1.ConfigMap](objs, "ConfigMap", "sale-seckill-config")
	if !ok {
		return nil, fmt.Errorf("no ConfigMap sale-seckill-config")
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		return nil, fmt.Errorf("config.yaml: %v", err)
	}
	return cfg, nil
}

// setting is config.yaml's value at a dotted key, "" when absent.
func setting(cfg map[string]any, key string) string {
	var v any = cfg
	for _, part := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[part]
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// checkChart is the shop's rules on a rendered chart: what a wrong value
// would break at install or at a rolling update, found before either.
func checkChart(objs []object) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	d, ok := find[*appsv1.Deployment](objs, "Deployment", "")
	if !ok {
		return []string{"no Deployment"}
	}
	cfg, err := shopConfig(objs)
	if err != nil {
		return []string{err.Error()}
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "shop" {
		return []string{"the Deployment's pod should run one container, shop"}
	}
	shop := pod.Containers[0]

	// The probes reach the port the shop listens on (server.addr).
	_, addrPort, _ := strings.Cut(setting(cfg, "server.addr"), ":")
	port := func(p intstr.IntOrString) string {
		if p.Type == intstr.String {
			for _, cp := range shop.Ports {
				if cp.Name == p.StrVal {
					return fmt.Sprint(cp.ContainerPort)
				}
			}
			return "no port named " + p.StrVal
		}
		return fmt.Sprint(p.IntVal)
	}
	if len(shop.Ports) == 0 || fmt.Sprint(shop.Ports[0].ContainerPort) != addrPort {
		bad("the container's port %v is not the one server.addr (%s) listens on", shop.Ports, setting(cfg, "server.addr"))
	}
	for _, pr := range []struct {
		name, path string
		probe      *corev1.Probe
	}{{"startupProbe", "/healthz", shop.StartupProbe}, {"livenessProbe", "/healthz", shop.LivenessProbe}, {"readinessProbe", "/readyz", shop.ReadinessProbe}} {
		switch {
		case pr.probe == nil || pr.probe.HTTPGet == nil:
			bad("%s: none, or not an HTTP GET", pr.name)
		case port(pr.probe.HTTPGet.Port) != addrPort:
			bad("%s on port %s, the shop listens on %s (server.addr)", pr.name, port(pr.probe.HTTPGet.Port), addrPort)
		case pr.probe.HTTPGet.Path != pr.path:
			bad("%s on %s, want %s", pr.name, pr.probe.HTTPGet.Path, pr.path)
		}
	}

	// The grace period covers the preStop pause and server.shutdownTimeout.
	shutdown := 15 * time.Second // the shop's default
	if s := setting(cfg, "server.shutdownTimeout"); s != "" {
		if shutdown, err = time.ParseDuration(s); err != nil {
			bad("server.shutdownTimeout %q: %v", s, err)
		}
	}
	var preStop time.Duration
	if shop.Lifecycle != nil && shop.Lifecycle.PreStop != nil && shop.Lifecycle.PreStop.Sleep != nil {
		preStop = time.Duration(shop.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	} else {
		bad("no preStop pause: the Service would still send buyers to a stopping instance")
	}
	grace := 30 * time.Second // Kubernetes' default
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	if grace <= preStop+shutdown {
		bad("terminationGracePeriodSeconds %v is not longer than the preStop pause %v and server.shutdownTimeout %v: a rolling update could kill a batch mid-commit", grace, preStop, shutdown)
	}

	// Every workload's containers: not root, nothing writable but volumes,
	// no capabilities, sized.
	type workload struct {
		name   string
		pod    corev1.PodSpec
		claims []corev1.PersistentVolumeClaim
	}
	workloads := []workload{{"Deployment " + d.Name, pod, nil}}
	for _, o := range objs {
		switch w := o.Obj.(type) {
		case *appsv1.StatefulSet:
			workloads = append(workloads, workload{"StatefulSet " + w.Name, w.Spec.Template.Spec, w.Spec.VolumeClaimTemplates})
		case *batchv1.Job:
			workloads = append(workloads, workload{"Job " + w.Name, w.Spec.Template.Spec, nil})
		}
	}
	for _, w := range workloads {
		for _, c := range slices.Concat(w.pod.InitContainers, w.pod.Containers) {
			sc := c.SecurityContext
			switch {
			case sc == nil:
				bad("%s, container %s: no securityContext", w.name, c.Name)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				bad("%s, container %s: readOnlyRootFilesystem is not set", w.name, c.Name)
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				bad("%s, container %s: allowPrivilegeEscalation is not false", w.name, c.Name)
			case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
				bad("%s, container %s: capabilities are not all dropped", w.name, c.Name)
			case (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) && (w.pod.SecurityContext == nil || w.pod.SecurityContext.RunAsNonRoot == nil || !*w.pod.SecurityContext.RunAsNonRoot):
				bad("%s, container %s: may run as root", w.name, c.Name)
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
				bad("%s, container %s: no memory request and limit, or no CPU request", w.name, c.Name)
			}
			for _, m := range c.VolumeMounts {
				if !slices.ContainsFunc(w.pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) &&
					!slices.ContainsFunc(w.claims, func(c corev1.PersistentVolumeClaim) bool { return c.Name == m.Name }) {
					bad("%s, container %s: mounts %s, no such volume", w.name, c.Name, m.Name)
				}
			}
		}
	}

	// The Service, the PodDisruptionBudget and the ServiceMonitor select the shop's pods.
	labels := d.Spec.Template.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !matches(d.Spec.Selector.MatchLabels) {
		bad("the Deployment's selector does not match its pods")
	}
	if s, ok := find[*corev1.Service](objs, "Service", d.Name); !ok || !matches(s.Spec.Selector) {
		bad("the Service %s selects no shop pod", d.Name)
	}
	if p, ok := find[*policyv1.PodDisruptionBudget](objs, "PodDisruptionBudget", d.Name); !ok || !matches(p.Spec.Selector.MatchLabels) {
		bad("the PodDisruptionBudget %s selects no shop pod", d.Name)
	}
	if sm, ok := find[*monitoringv1.ServiceMonitor](objs, "ServiceMonitor", ""); ok && !matches(sm.Spec.Selector.MatchLabels) {
		bad("the ServiceMonitor selects no shop Service")
	}

	// Every file of a secret the configuration names is a key of the
	// chart's Secret (a Secret of the user's is theirs to fill).
	if sec, ok := find[*corev1.Secret](objs, "Secret", ""); ok {
		for _, key := range []string{"mysql.passwordFile", "mysql.tlsCA", "zookeeper.auth", "auth.hmacSecretFile", "auth.publicKeyFile"} {
			file, isFile := strings.CutPrefix(strings.TrimPrefix(setting(cfg, key), "file:"), "/etc/seckill/secrets/")
			if setting(cfg, key) == "" {
				continue
			}
			if !isFile {
				bad("%s is %q, not a file of the mounted Secret", key, setting(cfg, key))
				continue
			}
			if _, ok := sec.StringData[file]; !ok {
				bad("%s names %s, a key the Secret %s does not hold", key, file, sec.Name)
			}
		}
	}
	return problems
}
