package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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
	e2e.Integration(t) // a load tool: make unit skips it, make test builds it
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
	objs, err := decodeAll(out)
	if err != nil {
		return nil, err
	}
	return objs, validateSchemas(t, out, filepath.Join(tmp, "builtin.yaml"))
}

// validateSchemas validates the Kubernetes API's own kinds of a rendered
// stream against the API's OpenAPI schemas of 1.30 (the newest that
// kubectl-validate v0.0.4 embeds, offline). The custom resources have no
// schema here (the operators' CRDs are not served by the module proxy):
// decodeAll alone checks them.
func validateSchemas(t *testing.T, stream []byte, file string) error {
	t.Helper()
	e2e.Integration(t)
	bin := filepath.Join(e2e.Root(t), "bin", "kubectl-validate")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run scripts/loadtools.sh helm (make loadtools builds it from the Go module proxy, once per machine)", bin)
	}
	var builtin []string
	for _, doc := range docSeparator.Split(string(stream), -1) {
		if strings.Contains(doc, "apiVersion: k8s.mariadb.com/") || strings.Contains(doc, "apiVersion: monitoring.coreos.com/") ||
			strings.TrimSpace(doc) == "" {
			continue
		}
		builtin = append(builtin, doc)
	}
	if err := os.WriteFile(file, []byte(strings.Join(builtin, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version", "1.30", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl-validate --version 1.30: %v\n%s", err, out)
	}
	return nil
}

// docSeparator splits a YAML stream into documents; commentLine is a
// comment line of one.
var docSeparator, commentLine = regexp.MustCompile(`(?m)^---\s*$`), regexp.MustCompile(`(?m)^#.*$`)

// decodeAll decodes a stream of YAML documents strictly.
func decodeAll(stream []byte) ([]object, error) {
	var objs []object
	for _, doc := range docSeparator.Split(string(stream), -1) {
		if strings.TrimSpace(commentLine.ReplaceAllString(doc, "")) == "" {
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

// chartValueSets are the value sets a user would start from: rendered
// here, installed on a control plane by kube_test.go.
var chartValueSets = []struct {
	name, values string
	extra        []string
	want         []string // kinds and names (after the release's "sale-seckill")
}{
	{"defaults", "", nil, []string{"Deployment", "Service", "ConfigMap -config", "ConfigMap -dashboard", "Secret -secrets",
		"Job -migrate-1", "PodDisruptionBudget", "StatefulSet -zookeeper", "Service -zookeeper-headless", "PodDisruptionBudget -zookeeper",
		"MariaDB -mariadb", "NetworkPolicy", "NetworkPolicy -zookeeper", "NetworkPolicy -mariadb"}},
	{"jwt, ZooKeeper auth and TLS to MySQL", `
auth: {mode: jwt}
zookeeperAuth: true
mysqlTLS: true
secrets:
  jwtHmacSecret: UFltCCeUBM6SBqzGEEH8PbRi1h1o5AWevGprmVitHxtO
  zookeeperAuth: digest:shop:s3cret-long-enough-for-the-shop-rule
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
	{"production (values-production.yaml)", productionValues(), productionPins, []string{"Deployment", "Service", "Service -metrics", "MariaDB -mariadb", "NetworkPolicy"}},
	{"operator Galera of 5 and the Prometheus Operator", `
mariadb: {replicas: 5, storage: {size: 50Gi, storageClassName: fast}}
shop: {replicas: 6}
`, []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"}, []string{"Deployment", "MariaDB -mariadb", "ServiceMonitor"}},
}

// productionValues is values-production.yaml; productionPins are what an
// installer adds to it: the images' digests and a Secret of its own.
func productionValues() string {
	b, err := os.ReadFile("../../" + chartDir + "/values-production.yaml")
	if err != nil {
		panic(err) // the file is the chart's: a test run without it is no run
	}
	return string(b)
}

var productionPins = []string{
	"--set", "shop.image.digest=sha256:" + strings.Repeat("a", 64),
	"--set", "zookeeper.image=zookeeper:3.8@sha256:" + strings.Repeat("b", 64),
	"--set", "mariadb.image=mariadb:11.4@sha256:" + strings.Repeat("c", 64),
	"--set", "secrets.existingSecret=my-shop-secrets",
}

// The production values hold what docs/kubernetes.md says a production
// needs (#75 item 7): buyers by token, TLS to MySQL, no proxy trusted until
// named, every image by digest (the render refuses a tag), the metrics port
// to one namespace's Prometheus; and with a LoadBalancer the Service keeps
// each buyer's address and does not expose /metrics (a Service of its own).
func TestTheProductionValuesAreAProductions(t *testing.T) {
	objs, err := render(t, productionValues(), append(slices.Clone(productionPins), "--set", "shop.service.type=LoadBalancer")...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := shopConfig(objs)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"auth.mode": "jwt", "mysql.tlsCA": "/etc/seckill/secrets/mysql-ca.pem", "server.trustedProxies": "[]"} {
		if got := setting(cfg, key); got != want {
			t.Errorf("config.yaml's %s: %q, want %q", key, got, want)
		}
	}
	for _, o := range objs {
		for _, c := range podContainers(o.Obj) {
			if !strings.Contains(c.Image, "@sha256:") {
				t.Errorf("%s %s runs %s: an image by tag", o.Kind, o.Name, c.Image)
			}
		}
	}
	api, _ := find[*corev1.Service](objs, "Service", "sale-seckill")
	if api == nil || api.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || len(api.Spec.Ports) != 1 || api.Spec.Ports[0].Name != "http" {
		t.Errorf("the buyers' LoadBalancer: %+v, want the http port alone, externalTrafficPolicy Local", api)
	}
	if m, ok := find[*corev1.Service](objs, "Service", "sale-seckill-metrics"); !ok || m.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("no ClusterIP Service sale-seckill-metrics")
	}
	np, _ := find[*networkingv1.NetworkPolicy](objs, "NetworkPolicy", "sale-seckill")
	for _, rule := range np.Spec.Ingress {
		for _, peer := range rule.From {
			if peer.NamespaceSelector != nil && len(peer.NamespaceSelector.MatchLabels) == 0 && len(peer.NamespaceSelector.MatchExpressions) == 0 {
				t.Errorf("the shop's NetworkPolicy admits %v from every namespace", peer.PodSelector)
			}
		}
	}
	if _, err := render(t, productionValues(), "--set", "secrets.existingSecret=my-shop-secrets"); err == nil || !strings.Contains(err.Error(), "requireDigests") {
		t.Errorf("the production values without digests: %v, want a refusal naming requireDigests", err)
	}
}

// podContainers are the containers (init ones too) of a workload object.
func podContainers(obj any) []corev1.Container {
	var spec *corev1.PodSpec
	switch o := obj.(type) {
	case *appsv1.Deployment:
		spec = &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		spec = &o.Spec.Template.Spec
	case *batchv1.Job:
		spec = &o.Spec.Template.Spec
	default:
		return nil
	}
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

// TestTheHelmChartRendersValidObjects renders the chart with each value set
// a user would start from, checks the objects each must have and the
// shop's rules on them (checkChart), and checks that helm refuses values
// that would not work, with a message naming the value.
func TestTheHelmChartRendersValidObjects(t *testing.T) {
	sets := chartValueSets
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
			for _, p := range checkChart(objs, shopImage(t), knownKeys(t)) {
				t.Error(p)
			}
		})
	}
	// The schemas catch what strict decoding cannot: a Deployment without
	// its selector, a name that is no DNS subdomain.
	for _, bad := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s}\nspec:\n  template:\n    spec:\n      containers: [{name: c}]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Sale_Config}\n",
	} {
		if _, err := decodeAll([]byte(bad)); err != nil {
			t.Fatalf("strict decoding refused %q: %v", bad, err)
		}
		if err := validateSchemas(t, []byte(bad), filepath.Join(t.TempDir(), "bad.yaml")); err == nil {
			t.Errorf("kubectl-validate passed %q", bad)
		}
	}
	// Values that cannot work are refused when rendering, naming the value.
	for _, bad := range []struct{ values, want string }{
		{"shop: {config: {server: {shutdownTimeout: 1500ms}}}", "shop.config.server.shutdownTimeout"},
		{"mariadb: {operator: false}", "mariadb.dsn"},
		{"zookeeper: {enabled: false}", "zookeeper.servers"},
		{"auth: {mode: oauth}", "auth.mode"},
		{"auth: {mode: jwt}", "secrets.jwtHmacSecret"},
		// What the shop would refuse at start is refused here, at render.
		{"auth: {mode: jwt}\nsecrets: {jwtHmacSecret: only-24-bytes-of-secret}", "secrets.jwtHmacSecret: 23 bytes"},
		{"secrets: {zookeeperAuth: 'digest:shop:short'}", "secrets.zookeeperAuth: the password has 5 bytes"},
		{"secrets: {zookeeperAuth: 'shop:not-a-digest-but-long-enough-for-the-rule'}", "secrets.zookeeperAuth: want digest"},
		{"mariadb: {operator: false, dsn: 'seckill:pw@tcp(db.example:3306)/seckill'}", "mariadb.dsn holds a password"},
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
	img, known := shopImage(t), knownKeys(t)
	if p := checkChart(base, img, known); len(p) > 0 {
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
		{"the port left to the image (0.0.0.0:8080) while the chart's is another", "server.addr", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			c := &d.Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "SHOP_SERVER_ADDR" })
			c.Ports[0].ContainerPort = 9090
			c.StartupProbe.HTTPGet.Port = intstr.FromInt32(9090)
		}},
		{"a key the shop does not know", "lock2.pathh", func(objs []object) {
			cm, _ := find[*corev1.ConfigMap](objs, "ConfigMap", "sale-seckill-config")
			cm.Data["config.yaml"] += "\nlock2:\n  pathh: /x\n"
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
		// The chart as it was: 0400 without fsGroup, so root's files the
		// shop's user 65532 could not read (permission denied at start).
		{"the secrets 0400 without an fsGroup", "cannot be read by its user 65532", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			d.Spec.Template.Spec.SecurityContext.FSGroup = nil
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					v.Secret.DefaultMode = new(int32(0o400))
				}
			}
		}},
		{"every key mounted", "mounts every key", func(objs []object) {
			j, _ := find[*batchv1.Job](objs, "Job", "")
			for _, v := range j.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					v.Secret.Items = nil
				}
			}
		}},
		{"the migration given ZooKeeper's identity", "mounts the Secret's zookeeper-auth", func(objs []object) {
			j, _ := find[*batchv1.Job](objs, "Job", "")
			for _, v := range j.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					v.Secret.Items = append(v.Secret.Items, corev1.KeyToPath{Key: "zookeeper-auth", Path: "zookeeper-auth"})
				}
			}
		}},
		{"/metrics back on the API's port", "served on the API's port", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			c := &d.Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "SHOP_SERVER_METRICSADDR" })
		}},
		{"the metrics port open to anyone", "lets anyone reach the metrics port", func(objs []object) {
			np, _ := find[*networkingv1.NetworkPolicy](objs, "NetworkPolicy", "sale-seckill")
			for i := range np.Spec.Ingress {
				np.Spec.Ingress[i].From = nil
			}
		}},
		{"the secrets open to every user", "open to every user", func(objs []object) {
			d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					v.Secret.DefaultMode = new(int32(0o444))
				}
			}
		}},
	} {
		objs, err := render(t, "")
		if err != nil {
			t.Fatal(err)
		}
		c.breakIt(objs)
		problems := strings.Join(checkChart(objs, img, known), "\n")
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
func checkChart(objs []object, shopImage image, known map[string]bool) []string {
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

	// Every key of config.yaml is one the shop knows (it would refuse to
	// start).
	for _, key := range flatKeys(cfg, "") {
		if !known[key] {
			bad("config.yaml sets %s, a key the shop does not know (docs/configuration.md)", key)
		}
	}

	// The probes reach the port the shop listens on: server.addr from the
	// container's environment, else the image's, else config.yaml.
	addr := setting(cfg, "server.addr")
	if v, ok := shopImage.env["SHOP_SERVER_ADDR"]; ok {
		addr = v
	}
	for _, e := range shop.Env {
		if e.Name == "SHOP_SERVER_ADDR" {
			addr = e.Value
		}
	}
	_, addrPort, _ := strings.Cut(addr, ":")
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
		bad("the container's port %v is not the one server.addr (%s) listens on", shop.Ports, addr)
	}
	for _, pr := range []struct {
		name, path string
		probe      *corev1.Probe
	}{{"startupProbe", "/healthz", shop.StartupProbe}, {"livenessProbe", "/healthz", shop.LivenessProbe}, {"readinessProbe", "/readyz", shop.ReadinessProbe}} {
		switch {
		case pr.probe == nil || pr.probe.HTTPGet == nil:
			bad("%s: none, or not an HTTP GET", pr.name)
		case port(pr.probe.HTTPGet.Port) != addrPort:
			bad("%s on port %s, the shop listens on %s (server.addr %s)", pr.name, port(pr.probe.HTTPGet.Port), addrPort, addr)
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
			value := setting(cfg, key)
			if value == "" {
				continue
			}
			file, isFile := strings.CutPrefix(strings.TrimPrefix(value, "file:"), "/etc/seckill/secrets/")
			if !isFile {
				bad("%s is %q, not a file of the mounted Secret", key, value)
				continue
			}
			if _, ok := sec.StringData[file]; !ok {
				bad("%s names %s, a key the Secret %s does not hold", key, file, sec.Name)
			}
		}
	}

	// The secrets' files, as a kubelet mounts them (owned by root, group
	// fsGroup if the pod sets one, the volume's mode), are readable by the
	// pod's user and by nobody else; each pod is given only the keys its
	// configuration names (the migration neither ZooKeeper's identity nor
	// the token keys, no pod the MariaDB root password).
	for _, w := range workloads {
		sc := w.pod.SecurityContext
		for _, v := range w.pod.Volumes {
			if v.Secret == nil || !strings.HasSuffix(v.Secret.SecretName, "-secrets") && v.Secret.SecretName != "my-shop-secrets" {
				continue
			}
			mode := int32(0o644)
			if v.Secret.DefaultMode != nil {
				mode = *v.Secret.DefaultMode
			}
			uid, group := int64(0), int64(0)
			if sc != nil && sc.RunAsUser != nil {
				uid = *sc.RunAsUser
			}
			if sc != nil && sc.FSGroup != nil {
				group = *sc.FSGroup
			}
			// The kubelet gives the pod's processes fsGroup as a group.
			readable := uid == 0 || mode&0o004 != 0 || group != 0 && mode&0o040 != 0
			if !readable {
				bad("%s: the Secret's files (root's, mode %04o, group %d) cannot be read by its user %d: the shop would stop at start", w.name, mode, group, uid)
			}
			if mode&0o007 != 0 {
				bad("%s: the Secret's files are mode %04o, open to every user: the shop refuses them", w.name, mode)
			}
			if len(v.Secret.Items) == 0 {
				bad("%s: mounts every key of the Secret %s, not only those it reads", w.name, v.Secret.SecretName)
			}
			var mountedCfg map[string]any
			for _, c := range slices.Concat(w.pod.InitContainers, w.pod.Containers) {
				for _, m := range c.VolumeMounts {
					if m.MountPath == "/etc/seckill/config.yaml" {
						mountedCfg, _ = configOf(objs, m.SubPath)
					}
				}
			}
			needed := map[string]bool{}
			for _, key := range []string{"mysql.passwordFile", "mysql.tlsCA", "zookeeper.auth", "auth.hmacSecretFile", "auth.publicKeyFile"} {
				if f, ok := strings.CutPrefix(strings.TrimPrefix(setting(mountedCfg, key), "file:"), "/etc/seckill/secrets/"); ok {
					needed[f] = true
				}
			}
			for _, it := range v.Secret.Items {
				if !needed[it.Key] {
					bad("%s: mounts the Secret's %s, which its configuration does not read", w.name, it.Key)
				}
				delete(needed, it.Key)
			}
			for f := range needed {
				if len(v.Secret.Items) > 0 {
					bad("%s: its configuration reads %s, which it does not mount", w.name, f)
				}
			}
		}
	}

	// The shop's pods have a NetworkPolicy: /metrics is served on a port
	// of its own (SHOP_SERVER_METRICSADDR), which only named peers reach,
	// and the scrape is pointed at it.
	metricsPort := ""
	for _, e := range shop.Env {
		if e.Name == "SHOP_SERVER_METRICSADDR" {
			_, metricsPort, _ = strings.Cut(e.Value, ":")
		}
	}
	if metricsPort == "" || metricsPort == addrPort {
		bad("/metrics is served on the API's port (no SHOP_SERVER_METRICSADDR of its own): a NetworkPolicy cannot open it to the scraper alone")
	}
	var shopPolicy *networkingv1.NetworkPolicy
	for _, o := range objs {
		if np, ok := o.Obj.(*networkingv1.NetworkPolicy); ok && matches(np.Spec.PodSelector.MatchLabels) {
			shopPolicy = np
		}
	}
	if shopPolicy == nil {
		bad("no NetworkPolicy selects the shop's pods: its API, /metrics and /dashboard are open to every pod on every port")
	} else {
		for _, rule := range shopPolicy.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port != nil && p.Port.String() == metricsPort && len(rule.From) == 0 {
					bad("the shop's NetworkPolicy lets anyone reach the metrics port %s", metricsPort)
				}
			}
		}
	}
	if sm, ok := find[*monitoringv1.ServiceMonitor](objs, "ServiceMonitor", ""); ok && len(sm.Spec.Endpoints) > 0 && sm.Spec.Endpoints[0].Port != "metrics" {
		bad("the ServiceMonitor scrapes port %s, not metrics", sm.Spec.Endpoints[0].Port)
	}
	// The buyers' Service: the API's port alone (a LoadBalancer would
	// expose /metrics to the world), and the buyer's address kept.
	if s, ok := find[*corev1.Service](objs, "Service", "sale-seckill"); ok {
		for _, p := range s.Spec.Ports {
			if p.TargetPort.String() == "metrics" || p.Name == "metrics" {
				bad("the buyers' Service %s exposes the metrics port", s.Name)
			}
		}
		if s.Spec.Type != corev1.ServiceTypeClusterIP && s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			bad("the buyers' %s Service %s hops through other nodes (externalTrafficPolicy %q): the limits would count nodes, not buyers", s.Spec.Type, s.Name, s.Spec.ExternalTrafficPolicy)
		}
	}

	// No password in the ConfigMap: a DSN's user:password@ is refused.
	if dsn := setting(cfg, "mysql.dsn"); regexp.MustCompile(`^[^@/]*:[^@]*@`).MatchString(dsn) {
		bad("config.yaml's mysql.dsn holds a password: a ConfigMap is no place for it")
	}
	return problems
}

// configOf is the ConfigMap -config's key (config.yaml, migrate.yaml) as a
// config.
func configOf(objs []object, key string) (map[string]any, error) {
	for _, o := range objs {
		if cm, ok := o.Obj.(*corev1.ConfigMap); ok && strings.HasSuffix(cm.Name, "-config") {
			var cfg map[string]any
			if err := yaml.Unmarshal([]byte(cm.Data[key]), &cfg); err != nil {
				return nil, err
			}
			return cfg, nil
		}
	}
	return nil, fmt.Errorf("no ConfigMap -config")
}

// flatKeys is a config's keys, dotted (lock.path), sorted.
func flatKeys(m map[string]any, prefix string) []string {
	var keys []string
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			keys = append(keys, flatKeys(sub, prefix+k+".")...)
		} else {
			keys = append(keys, prefix+k)
		}
	}
	slices.Sort(keys)
	return keys
}

// knownKeys is every key the shop knows: those of the repository's
// config.yaml, which is generated from the shop's settings and lists each.
func knownKeys(t *testing.T) map[string]bool { return e2e.SettingKeys(t) }

// image is what the Dockerfile's shop stage gives a container: its
// environment and its entrypoint.
type image struct {
	env        map[string]string
	entrypoint []string
}

// shopImage reads the Dockerfile's last stage named shop.
func shopImage(t *testing.T) image {
	t.Helper()
	b, err := os.ReadFile(e2e.InRoot(t, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	img, in := image{env: map[string]string{}}, false
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "FROM":
			in = len(fields) == 4 && strings.EqualFold(fields[2], "AS") && fields[3] == "shop"
		case in && fields[0] == "ENV":
			for _, kv := range fields[1:] {
				k, v, _ := strings.Cut(kv, "=")
				img.env[k] = v
			}
		case in && fields[0] == "ENTRYPOINT":
			if err := yaml.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT")), &img.entrypoint); err != nil {
				t.Fatalf("Dockerfile: %s: %v", line, err)
			}
		}
	}
	if len(img.entrypoint) == 0 {
		t.Fatal("the Dockerfile has no stage shop with an ENTRYPOINT")
	}
	return img
}

// composeDefaultRE is a compose value ${NAME:-default}, the default taken.
var composeDefaultRE = regexp.MustCompile(`^\$\{[A-Z_]+:-(.+)\}$`)

// TestTheChartAndComposeAgree: what docker-compose.yml and the chart's
// defaults share is the same — the ZooKeeper and MariaDB images, the Galera
// settings (deploy/galera/galera.cnf against the MariaDB's myCnf), the
// shop's port and readiness path, the migration's command, the Grafana
// dashboard — and every SHOP_* variable compose sets is a setting the shop
// knows.
func TestTheChartAndComposeAgree(t *testing.T) {
	objs, err := render(t, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(e2e.InRoot(t, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	type composeService struct {
		Image       string            `json:"image"`
		Command     []string          `json:"command"`
		Environment map[string]string `json:"environment"`
		Healthcheck struct {
			Test []string `json:"test"`
		} `json:"healthcheck"`
	}
	var compose struct {
		Services map[string]composeService `json:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	service := func(name string) composeService {
		s, ok := compose.Services[name]
		if !ok {
			t.Fatalf("docker-compose.yml has no service %s", name)
		}
		// An image named by a variable (${ZOOKEEPER_IMAGE:-zookeeper:3.8}) is
		// its default: what a user without the variable runs.
		if m := composeDefaultRE.FindStringSubmatch(s.Image); m != nil {
			s.Image = m[1]
		}
		return s
	}

	zk, ok := find[*appsv1.StatefulSet](objs, "StatefulSet", "sale-seckill-zookeeper")
	if !ok {
		t.Fatal("no ZooKeeper StatefulSet")
	}
	if img := zk.Spec.Template.Spec.Containers[0].Image; img != service("zookeeper").Image || service("zk1").Image != img {
		t.Errorf("ZooKeeper's image: compose %s and %s, the chart %s", service("zookeeper").Image, service("zk1").Image, img)
	}
	db, ok := find[*mariaDB](objs, "MariaDB", "")
	if !ok {
		t.Fatal("no MariaDB")
	}
	if db.Spec.Image != service("galera1").Image {
		t.Errorf("MariaDB's image: compose's Galera nodes %s, the chart's %s", service("galera1").Image, db.Spec.Image)
	}
	cnf, err := os.ReadFile(e2e.InRoot(t, "deploy/galera/galera.cnf"))
	if err != nil {
		t.Fatal(err)
	}
	settings := func(text string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(text, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
				m[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		return m
	}
	chartCnf := settings(db.Spec.MyCnf)
	for _, k := range []string{"binlog_format", "innodb_autoinc_lock_mode", "innodb_flush_log_at_trx_commit", "max_connections"} {
		if want := settings(string(cnf))[k]; want == "" || chartCnf[k] != want {
			t.Errorf("%s: galera.cnf %q, the chart's myCnf %q", k, want, chartCnf[k])
		}
	}

	d, _ := find[*appsv1.Deployment](objs, "Deployment", "")
	c := d.Spec.Template.Spec.Containers[0]
	shop1 := service("shop1")
	if want := fmt.Sprintf("0.0.0.0:%d", c.Ports[0].ContainerPort); shop1.Environment["SHOP_SERVER_ADDR"] != want {
		t.Errorf("the shop's address: compose %s, the chart %s", shop1.Environment["SHOP_SERVER_ADDR"], want)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d%s", c.Ports[0].ContainerPort, c.ReadinessProbe.HTTPGet.Path); !slices.Contains(shop1.Healthcheck.Test, want) {
		t.Errorf("the readiness check: compose %v, the chart %s", shop1.Healthcheck.Test, want)
	}
	job, ok := find[*batchv1.Job](objs, "Job", "")
	if !ok {
		t.Fatal("no migration Job")
	}
	if args := job.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, service("migrate").Command) {
		t.Errorf("the migration: compose %v, the chart %v", service("migrate").Command, args)
	}
	known := knownKeys(t)
	for name, s := range compose.Services {
		for k := range s.Environment {
			key, ok := strings.CutPrefix(k, "SHOP_")
			if !ok || k == "SHOP_CONFIG" {
				continue
			}
			if !slices.ContainsFunc(slices.Collect(maps.Keys(known)), func(known string) bool {
				return strings.ToUpper(strings.ReplaceAll(known, ".", "_")) == key
			}) {
				t.Errorf("compose's %s sets %s, not a setting of the shop's", name, k)
			}
		}
	}
	composeBoard, err := os.ReadFile(e2e.InRoot(t, "deploy/grafana/dashboards/seckill.json"))
	if err != nil {
		t.Fatal(err)
	}
	chartBoard, err := os.ReadFile(e2e.InRoot(t, chartDir+"/dashboards/seckill.json"))
	if err != nil || !bytes.Equal(composeBoard, chartBoard) {
		t.Errorf("the chart's dashboard is not deploy/grafana's (%v): cp deploy/grafana/dashboards/seckill.json %s/dashboards/", err, chartDir)
	}
	// Every query names its datasource by the dashboard's variable, so that
	// it imports into any Grafana: a uid of compose's own left every panel
	// empty elsewhere.
	var board struct {
		Templating struct{ List []struct{ Name, Type string } }
	}
	if err := json.Unmarshal(composeBoard, &board); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(board.Templating.List, func(v struct{ Name, Type string }) bool { return v.Name == "datasource" && v.Type == "datasource" }) {
		t.Error("the dashboard has no datasource variable")
	}
	if uids := regexp.MustCompile(`"uid": "([^"]*)"`).FindAllStringSubmatch(string(composeBoard), -1); slices.ContainsFunc(uids, func(m []string) bool { return m[1] != "${datasource}" && m[1] != "seckill" }) {
		t.Errorf("the dashboard names a datasource by a uid of its own: %q", uids)
	}
}

// TestEveryChartValueIsDocumented: values.yaml documents each key on the
// line above it.
func TestEveryChartValueIsDocumented(t *testing.T) {
	b, err := os.ReadFile(e2e.InRoot(t, chartDir+"/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`^(\s*)([A-Za-z][A-Za-z0-9]*):`)
	prev, block := "", -1 // block: the indentation of a block scalar's key while in it
	keys := 0
	for i, line := range strings.Split(string(b), "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if block >= 0 && (strings.TrimSpace(line) == "" || indent > block) {
			continue
		}
		block = -1
		if m := key.FindStringSubmatch(line); m != nil {
			keys++
			if !strings.HasPrefix(strings.TrimSpace(prev), "#") {
				t.Errorf("values.yaml:%d: %s has no comment above it", i+1, m[2])
			}
			if strings.HasSuffix(strings.TrimSpace(line), "|") {
				block = indent
			}
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	if keys < 50 {
		t.Errorf("found %d keys in values.yaml: the parsing lost them", keys)
	}
}
