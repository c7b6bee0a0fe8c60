package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
	"github.com/seckill-zk/seckill-zk/tests/framework/kube"
)

// The chart on a real control plane (tests/framework/kube: kube-apiserver,
// kube-controller-manager and kube-scheduler v1.37.2, Debian's etcd, kwok's
// fake nodes). No container runs: a pod on a kwok node goes Running and
// Ready at once, its probes untried and its init container not waited for
// (TestTheShopStartsAsTheChartsDeploymentSays runs the shop's processes as
// a kubelet would). What is checked here is what the API server and the
// controllers do with the chart: admission (PodSecurity restricted, the
// operators' CRD schemas, strict server-side field validation), the
// scheduler, a Deployment's rollout against its PodDisruptionBudget, the
// migration Job, the Services' endpoints, and helm's install, upgrade,
// rollback and uninstall against them.

// kubeHelm runs bin/helm against cp, its own config and cache under the
// test's directory; it returns helm's output and error.
func kubeHelm(t *testing.T, cp *kube.ControlPlane, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBinary(t), append(args, "--kubeconfig", cp.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// manifests splits helm template's output into objects, as JSON maps.
func manifests(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, doc := range strings.Split(out, "\n---") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("a rendered document: %v\n%s", err, doc)
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			objs = append(objs, m)
		}
	}
	return objs
}

// apiKinds are the kinds the tests reach through the API: their group
// version and plural.
var apiKinds = map[string]struct{ apiVersion, plural string }{
	"ConfigMap": {"v1", "configmaps"}, "Secret": {"v1", "secrets"}, "Service": {"v1", "services"},
	"Pod": {"v1", "pods"}, "PersistentVolumeClaim": {"v1", "persistentvolumeclaims"},
	"Deployment": {"apps/v1", "deployments"}, "StatefulSet": {"apps/v1", "statefulsets"}, "Job": {"batch/v1", "jobs"},
	"PodDisruptionBudget": {"policy/v1", "poddisruptionbudgets"}, "NetworkPolicy": {"networking.k8s.io/v1", "networkpolicies"},
	"ServiceMonitor": {"monitoring.coreos.com/v1", "servicemonitors"}, "MariaDB": {"k8s.mariadb.com/v1alpha1", "mariadbs"},
}

// collection is the API path of a kind's objects in ns.
func collection(t *testing.T, kind, ns string) string {
	t.Helper()
	k, ok := apiKinds[kind]
	if !ok {
		t.Fatalf("no API path known for %s", kind)
	}
	if k.apiVersion == "v1" {
		return "/api/v1/namespaces/" + ns + "/" + k.plural
	}
	return "/apis/" + k.apiVersion + "/namespaces/" + ns + "/" + k.plural
}

// dryRun creates obj in ns as the API server would, strictly (an unknown
// or duplicate field refused), without keeping it: the status and answer.
func dryRun(t *testing.T, cp *kube.ControlPlane, ns string, obj map[string]any) (int, string) {
	t.Helper()
	path := collection(t, obj["kind"].(string), ns) + "?dryRun=All&fieldValidation=Strict"
	code, body, err := cp.Do(http.MethodPost, path, obj)
	if err != nil {
		t.Fatal(err)
	}
	return code, string(body)
}

// installCRDs installs the operators' CRDs (testdata/crds) and waits
// until each is Established.
func installCRDs(t *testing.T, cp *kube.ControlPlane) {
	t.Helper()
	files, _ := filepath.Glob(e2e.InRoot(t, "tests/e2e/testdata/crds/*.yaml"))
	if len(files) != 2 {
		t.Fatalf("the operators' CRDs: %v, want two files", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := manifests(t, string(b))[0]
		cp.MustDo(t, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, nil)
		name := crd["metadata"].(map[string]any)["name"].(string)
		cp.Eventually(t, time.Minute, name+" Established", func() (bool, string) {
			var got struct {
				Status struct {
					Conditions []struct{ Type, Status string }
				}
			}
			cp.MustDo(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, nil, &got)
			for _, c := range got.Status.Conditions {
				if c.Type == "Established" && c.Status == "True" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v", got.Status.Conditions)
		})
	}
}

// restrictedNamespace makes a namespace whose pods PodSecurity admits
// only at the restricted level.
func restrictedNamespace(t *testing.T, cp *kube.ControlPlane, name string) {
	t.Helper()
	cp.MustDo(t, http.MethodPost, "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": name,
		"labels": map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}, nil)
}

// volumes makes n PersistentVolumes of no class for the claims of the
// chart's StatefulSets (no provisioner runs; the binder controller binds
// them). Nothing mounts them.
func volumes(t *testing.T, cp *kube.ControlPlane, prefix string, n int) {
	t.Helper()
	for i := range n {
		cp.MustDo(t, http.MethodPost, "/api/v1/persistentvolumes", map[string]any{
			"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", prefix, i)},
			"spec": map[string]any{"capacity": map[string]string{"storage": "100Gi"}, "accessModes": []string{"ReadWriteOnce"},
				"persistentVolumeReclaimPolicy": "Retain", "hostPath": map[string]string{"path": "/nonexistent/" + prefix}},
		}, nil)
	}
}

// list is the items of a collection, as maps.
func list(t *testing.T, cp *kube.ControlPlane, path string) []map[string]any {
	t.Helper()
	var l struct{ Items []map[string]any }
	cp.MustDo(t, http.MethodGet, path, nil, &l)
	return l.Items
}

// field walks m along keys; nil where a key is missing.
func field(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

func name(o map[string]any) string { s, _ := field(o, "metadata", "name").(string); return s }

// readyPods is the names of the Ready pods of ns matching selector.
func readyPods(t *testing.T, cp *kube.ControlPlane, ns, selector string) []string {
	t.Helper()
	var names []string
	for _, p := range list(t, cp, "/api/v1/namespaces/"+ns+"/pods?labelSelector="+selector) {
		conds, _ := field(p, "status", "conditions").([]any)
		for _, c := range conds {
			if field(c, "type") == "Ready" && field(c, "status") == "True" && field(p, "metadata", "deletionTimestamp") == nil {
				names = append(names, name(p))
			}
		}
	}
	slices.Sort(names)
	return names
}

// endpointsOf is the pods a Service's EndpointSlices name as ready.
func endpointsOf(t *testing.T, cp *kube.ControlPlane, ns, service string) []string {
	t.Helper()
	var names []string
	for _, s := range list(t, cp, "/apis/discovery.k8s.io/v1/namespaces/"+ns+"/endpointslices?labelSelector=kubernetes.io/service-name="+service) {
		eps, _ := field(s, "endpoints").([]any)
		for _, e := range eps {
			if n, ok := field(e, "targetRef", "name").(string); ok && field(e, "conditions", "ready") == true {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// selectorOf is a label selector string of a Service's or workload's
// selector.
func selectorOf(t *testing.T, cp *kube.ControlPlane, path string, keys ...string) string {
	t.Helper()
	var o map[string]any
	cp.MustDo(t, http.MethodGet, path, nil, &o)
	sel, _ := field(o, keys...).(map[string]any)
	var parts []string
	for k, v := range sel {
		parts = append(parts, k+"="+fmt.Sprint(v))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		t.Fatalf("%s: no selector at %v", path, keys)
	}
	return strings.Join(parts, ",")
}

// jobDone waits until the Job is Complete.
func jobDone(t *testing.T, cp *kube.ControlPlane, ns, job string) {
	t.Helper()
	cp.Eventually(t, 2*time.Minute, "Job "+job+" Complete", func() (bool, string) {
		var j map[string]any
		code, body, err := cp.Do(http.MethodGet, "/apis/batch/v1/namespaces/"+ns+"/jobs/"+job, nil)
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("%d %v %s", code, err, body)
		}
		_ = json.Unmarshal(body, &j)
		conds, _ := field(j, "status", "conditions").([]any)
		for _, c := range conds {
			if field(c, "type") == "Complete" && field(c, "status") == "True" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v", field(j, "status"))
	})
}

// checkServing checks a release's shop in ns: the Deployment's pods all
// admitted and Ready, and the shop's Service naming exactly them.
func checkServing(t *testing.T, cp *kube.ControlPlane, ns, release string, replicas int) {
	t.Helper()
	full := release + "-seckill"
	sel := selectorOf(t, cp, "/apis/apps/v1/namespaces/"+ns+"/deployments/"+full, "spec", "selector", "matchLabels")
	pods := readyPods(t, cp, ns, sel)
	if len(pods) != replicas {
		t.Errorf("%d Ready shop pods, want %d: %v", len(pods), replicas, pods)
	}
	cp.Eventually(t, time.Minute, "the Service's endpoints name the shop's pods", func() (bool, string) {
		eps := endpointsOf(t, cp, ns, full)
		return slices.Equal(eps, pods), fmt.Sprintf("endpoints %v, pods %v", eps, pods)
	})
}

// TestTheChartOnAControlPlane installs the chart with each value set the
// chart test renders, then upgrades, rolls back and uninstalls the
// defaults, and shows each refusal the API server makes of a chart broken
// that way.
func TestTheChartOnAControlPlane(t *testing.T) {
	e2e.Integration(t)
	helmBinary(t)
	cp := kube.Start(t, e2e.Root(t), 3)
	installCRDs(t, cp)
	chart := e2e.InRoot(t, chartDir)

	for i, set := range chartValueSets {
		t.Run("install "+set.name, func(t *testing.T) {
			ns := fmt.Sprintf("set%d", i)
			restrictedNamespace(t, cp, ns)
			volumes(t, cp, ns, 3)
			// helm -f splits at commas, which a subtest's directory may hold.
			tmp, err := os.MkdirTemp("", "seckill-kube-values-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			file := filepath.Join(tmp, "values.yaml")
			if err := os.WriteFile(file, []byte(set.values), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := kubeHelm(t, cp, append([]string{"template", "sale", chart, "--namespace", ns, "-f", file}, set.extra...)...)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			objs := manifests(t, out)
			for _, o := range objs {
				if code, body := dryRun(t, cp, ns, o); code != http.StatusCreated {
					t.Errorf("%s %s refused by the API server (strict): %d %s", o["kind"], name(o), code, body)
				}
				if o["kind"] == "Secret" && strings.Contains(set.values, "existingSecret") {
					t.Errorf("the chart made a Secret (%s) beside the user's", name(o))
				}
			}
			if strings.Contains(set.values, "existingSecret") {
				userSecret(t, cp, ns, objs)
			}
			// Not set.extra's --api-versions: the API server names the
			// APIs its CRDs serve. Its --set pins, as an installer would.
			install := append([]string{"install", "sale", chart, "--namespace", ns, "-f", file, "--wait", "--timeout", "3m"}, withoutAPIVersions(set.extra)...)
			if out, err := kubeHelm(t, cp, install...); err != nil {
				t.Fatalf("helm install --wait: %v\n%s\n%s", err, out, diagnose(t, cp, ns))
			}
			for _, o := range objs {
				if o["kind"] == "Job" {
					jobDone(t, cp, ns, name(o))
				}
			}
			checkServing(t, cp, ns, "sale", replicasOf(t, objs))
			if i == 0 {
				upgradeRollbackUninstall(t, cp, chart, ns)
			}
		})
	}
	t.Run("refusals", func(t *testing.T) { refusals(t, cp, chart) })
	t.Run("docs/kubernetes.md as written", func(t *testing.T) { kubernetesDoc(t, cp) })
}

// withoutAPIVersions is a helm command line's flags less each
// --api-versions and its value.
func withoutAPIVersions(flags []string) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		if flags[i] == "--api-versions" {
			i++
			continue
		}
		out = append(out, flags[i])
	}
	return out
}

// kubernetesDoc runs docs/kubernetes.md's commands as written, through a
// shell in the checkout's root with bin/ first on the PATH and KUBECONFIG
// naming cp: each install then the commands of its release's life, as the
// doc's sections give them; the second install (your own databases) after
// the first release's uninstall, since both name the release sale. The
// commands that need a running container (kubectl exec and port-forward,
// and bin/loadtest through the forward) are named in the log, not run: no
// container runs under kwok (TestTheShopStartsAsTheChartsDeploymentSays
// runs stock set in the shop's own process).
func kubernetesDoc(t *testing.T, cp *kube.ControlPlane) {
	doc, err := os.ReadFile(e2e.InRoot(t, "docs/kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	var installs, templates, life []string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, "helm install") && strings.Contains(line, "…"):
			templates = append(templates, line)
		case in && strings.HasPrefix(line, "helm install"):
			installs = append(installs, line)
		case in && strings.TrimSpace(line) != "":
			life = append(life, line)
		}
	}
	if len(installs) != 2 {
		t.Fatalf("docs/kubernetes.md's helm install lines: %d, want the chart's databases and your own", len(installs))
	}
	volumes(t, cp, "docs", 3)
	home := t.TempDir()
	run := func(line string) {
		t.Helper()
		fields := strings.Fields(line)
		if fields[0] == "bin/loadtest" || fields[0] == "kubectl" && slices.ContainsFunc(fields, func(f string) bool { return f == "exec" || f == "port-forward" }) {
			t.Logf("not run (it needs a running container): %s", line)
			return
		}
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = e2e.Root(t)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "PATH="+e2e.InRoot(t, "bin")+":"+os.Getenv("PATH"),
			"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		timer := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
		out, err := cmd.CombinedOutput()
		timer.Stop()
		if err != nil {
			t.Fatalf("docs/kubernetes.md: %s: %v\n%s", line, err, out)
		}
		t.Logf("ran: %s", line)
	}
	rollout := func() string {
		for _, l := range life {
			if strings.Contains(l, "rollout status") {
				return l
			}
		}
		t.Fatal("docs/kubernetes.md has no kubectl rollout status line")
		return ""
	}()
	// An install whose digests are the reader's to fill: rendered with
	// made-up ones, since a release of it would take the name sale again.
	for _, l := range templates {
		filled := strings.ReplaceAll(strings.Replace(l, "helm install", "helm template", 1), "sha256:…", "sha256:"+strings.Repeat("d", 64))
		if strings.Contains(filled, "…") {
			t.Errorf("docs/kubernetes.md: %s: a placeholder other than an image's digest", l)
			continue
		}
		run(filled)
	}
	run(installs[0])
	for _, l := range life {
		run(l)
	}
	run(installs[1])
	run(rollout)
	checkServing(t, cp, "shop", "sale", 3)
}

// diagnose says what ns holds: its pods (phase, node, conditions) and its
// events, for a failure's message.
func diagnose(t *testing.T, cp *kube.ControlPlane, ns string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range list(t, cp, "/api/v1/namespaces/"+ns+"/pods") {
		fmt.Fprintf(&b, "pod %s: %v on %v, %v\n", name(p), field(p, "status", "phase"), field(p, "spec", "nodeName"), field(p, "status", "conditions"))
	}
	for _, e := range list(t, cp, "/api/v1/namespaces/"+ns+"/events") {
		fmt.Fprintf(&b, "event %v %v: %v %v\n", field(e, "involvedObject", "kind"), field(e, "involvedObject", "name"), field(e, "reason"), field(e, "message"))
	}
	return b.String()
}

// replicasOf is the rendered Deployment's replicas.
func replicasOf(t *testing.T, objs []map[string]any) int {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == "Deployment" {
			if n, ok := field(o, "spec", "replicas").(float64); ok {
				return int(n)
			}
		}
	}
	t.Fatal("no Deployment with replicas rendered")
	return 0
}

// userSecret makes the Secret a user names in secrets.existingSecret,
// with every key the rendered pods read from it.
func userSecret(t *testing.T, cp *kube.ControlPlane, ns string, objs []map[string]any) {
	t.Helper()
	data := map[string]string{}
	var secretName string
	for _, o := range objs {
		b, _ := json.Marshal(o)
		var pod struct {
			Spec struct {
				Template struct {
					Spec struct {
						Volumes []struct {
							Secret *struct {
								SecretName string
								Items      []struct{ Key string }
							}
						}
					}
				}
			}
		}
		_ = json.Unmarshal(b, &pod)
		for _, v := range pod.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				secretName = v.Secret.SecretName
				for _, it := range v.Secret.Items {
					data[it.Key] = "a value of the user's, long enough for the shop's rules: 0123456789abcdef"
				}
			}
		}
	}
	if secretName != "my-shop-secrets" || len(data) == 0 {
		t.Fatalf("the pods read secret %q keys %v, want my-shop-secrets", secretName, data)
	}
	cp.MustDo(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/secrets", map[string]any{
		"metadata": map[string]any{"name": secretName}, "stringData": data}, nil)
}

// upgradeRollbackUninstall takes the release sale in ns through a helm
// upgrade with a changed setting (watching the rollout against the
// PodDisruptionBudget), a rollback and an uninstall, then installs it again.
func upgradeRollbackUninstall(t *testing.T, cp *kube.ControlPlane, chart, ns string) {
	t.Helper()
	deploy := "/apis/apps/v1/namespaces/" + ns + "/deployments/sale-seckill"
	var pdb map[string]any
	cp.MustDo(t, http.MethodGet, "/apis/policy/v1/namespaces/"+ns+"/poddisruptionbudgets/sale-seckill", nil, &pdb)
	maxUnavailable, _ := field(pdb, "spec", "maxUnavailable").(float64)
	if maxUnavailable < 1 {
		t.Fatalf("the shop's PodDisruptionBudget: %v, want a maxUnavailable", field(pdb, "spec"))
	}
	template := func() string {
		var d map[string]any
		cp.MustDo(t, http.MethodGet, deploy, nil, &d)
		s, _ := field(d, "spec", "template", "metadata", "annotations", "checksum/config").(string)
		return s
	}
	first := template()

	// During the upgrade, the ready shops never fall below what the PDB
	// allows; the rollout makes a new ReplicaSet and runs a new Job.
	var mu sync.Mutex
	lowest, seen := 1<<30, 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			code, body, err := cp.Do(http.MethodGet, deploy, nil)
			if err != nil || code != http.StatusOK {
				continue
			}
			var d map[string]any
			_ = json.Unmarshal(body, &d)
			ready, _ := field(d, "status", "readyReplicas").(float64)
			mu.Lock()
			lowest, seen = min(lowest, int(ready)), seen+1
			mu.Unlock()
		}
	}()
	out, err := kubeHelm(t, cp, "upgrade", "sale", chart, "--namespace", ns, "--reuse-values",
		"--set", "shop.config.purchase.queueTarget=400ms", "--wait", "--timeout", "3m")
	close(stop)
	<-watched
	if err != nil {
		t.Fatalf("helm upgrade --wait: %v\n%s", err, out)
	}
	replicas := 3
	if mu.Lock(); seen == 0 || lowest < replicas-int(maxUnavailable) {
		t.Errorf("during the rolling update the ready shops fell to %d (of %d polls), below the %d the PodDisruptionBudget allows", lowest, seen, replicas-int(maxUnavailable))
	}
	mu.Unlock()
	second := template()
	if second == first {
		t.Fatal("the upgrade with a changed setting left the pod template as it was: no rollout")
	}
	rs := list(t, cp, "/apis/apps/v1/namespaces/"+ns+"/replicasets")
	if len(rs) < 2 {
		t.Errorf("%d ReplicaSets after the upgrade, want the old and the new", len(rs))
	}
	jobDone(t, cp, ns, "sale-seckill-migrate-2")
	checkServing(t, cp, ns, "sale", replicas)

	if out, err := kubeHelm(t, cp, "rollback", "sale", "1", "--namespace", ns, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm rollback --wait: %v\n%s", err, out)
	}
	if got := template(); got != first {
		t.Errorf("after the rollback the pod template's config checksum is %s, want revision 1's %s", got, first)
	}
	jobDone(t, cp, ns, "sale-seckill-migrate-1") // revision 1's manifest, applied again
	checkServing(t, cp, ns, "sale", replicas)

	// Uninstall leaves the volumes and the passwords the chart made, and
	// an install of the same release reads the passwords back.
	secretPath := "/api/v1/namespaces/" + ns + "/secrets/sale-seckill-secrets"
	var before map[string]any
	cp.MustDo(t, http.MethodGet, secretPath, nil, &before)
	if out, err := kubeHelm(t, cp, "uninstall", "sale", "--namespace", ns, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	var after map[string]any
	cp.MustDo(t, http.MethodGet, secretPath, nil, &after)
	if !equalJSON(field(before, "data"), field(after, "data")) {
		t.Error("the Secret of generated passwords changed at uninstall")
	}
	// docs/kubernetes.md's selector for the volumes to delete by hand.
	if pvcs := list(t, cp, "/api/v1/namespaces/"+ns+"/persistentvolumeclaims?labelSelector=app.kubernetes.io/instance=sale"); len(pvcs) != 3 {
		t.Errorf("%d PersistentVolumeClaims of the release after uninstall (app.kubernetes.io/instance=sale), want ZooKeeper's 3", len(pvcs))
	}
	for _, kind := range []string{"Deployment", "StatefulSet", "Service", "ConfigMap", "Job", "PodDisruptionBudget", "NetworkPolicy", "MariaDB"} {
		for _, o := range list(t, cp, collection(t, kind, ns)+"?labelSelector=app.kubernetes.io/instance=sale") {
			t.Errorf("%s %s left after uninstall", kind, name(o))
		}
	}
	if out, err := kubeHelm(t, cp, "install", "sale", chart, "--namespace", ns, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm install again: %v\n%s", err, out)
	}
	var again map[string]any
	cp.MustDo(t, http.MethodGet, secretPath, nil, &again)
	if !equalJSON(field(before, "data"), field(again, "data")) {
		t.Error("an install of the same release after uninstall made new passwords: MariaDB's kept data would refuse them")
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y) && len(x) > 4
}

// refusals: each kind of refusal the API server makes, on a rendering of
// the chart broken that way, beside the same object unbroken.
func refusals(t *testing.T, cp *kube.ControlPlane, chart string) {
	ns := "refusals"
	restrictedNamespace(t, cp, ns)
	out, err := kubeHelm(t, cp, "template", "sale", chart, "--namespace", ns)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	objs := manifests(t, out)
	find := func(kind string) map[string]any {
		for _, o := range objs {
			if o["kind"] == kind {
				b, _ := json.Marshal(o)
				var c map[string]any
				_ = json.Unmarshal(b, &c)
				return c
			}
		}
		t.Fatalf("no %s rendered", kind)
		return nil
	}
	podOf := func() map[string]any {
		tmpl := field(find("Deployment"), "spec", "template").(map[string]any)
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "shop-as-rendered"}, "spec": tmpl["spec"]}
	}
	cases := []struct {
		name    string
		obj     func() map[string]any
		breakIt func(map[string]any)
		want    string
	}{
		{"PodSecurity restricted: a container that may run as root", podOf, func(p map[string]any) {
			c := field(p, "spec", "containers").([]any)[0].(map[string]any)
			c["securityContext"].(map[string]any)["runAsNonRoot"] = false
			delete(field(p, "spec", "securityContext").(map[string]any), "runAsNonRoot")
		}, "violates PodSecurity"},
		{"PodSecurity restricted: privilege escalation", podOf, func(p map[string]any) {
			c := field(p, "spec", "containers").([]any)[0].(map[string]any)
			c["securityContext"].(map[string]any)["allowPrivilegeEscalation"] = true
		}, "allowPrivilegeEscalation != false"},
		{"the MariaDB CRD's schema: replicas not a number", func() map[string]any { return find("MariaDB") }, func(m map[string]any) {
			field(m, "spec").(map[string]any)["replicas"] = "three"
		}, "spec.replicas"},
		{"the MariaDB CRD's schema: a field it does not know", func() map[string]any { return find("MariaDB") }, func(m map[string]any) {
			field(m, "spec").(map[string]any)["galeraa"] = map[string]any{"enabled": true}
		}, `unknown field "spec.galeraa"`},
		{"strict field validation: a Deployment field the API does not know", func() map[string]any { return find("Deployment") }, func(d map[string]any) {
			field(d, "spec").(map[string]any)["replica"] = 3
		}, `unknown field "spec.replica"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if code, body := dryRun(t, cp, ns, c.obj()); code != http.StatusCreated {
				t.Fatalf("unbroken, refused: %d %s", code, body)
			}
			broken := c.obj()
			c.breakIt(broken)
			code, body := dryRun(t, cp, ns, broken)
			var status struct{ Message string }
			_ = json.Unmarshal([]byte(body), &status)
			if code < 400 || !strings.Contains(status.Message, c.want) {
				t.Errorf("broken: %d %s; want a refusal naming %q", code, body, c.want)
			}
		})
	}
	// A Service that selects nothing: helm --wait takes a ClusterIP Service
	// as ready at once (kstatus reads no endpoints), so checkServing's
	// comparison is what catches it: shown here on such a Service beside
	// the release of set0.
	t.Run("a Service selecting nothing", func(t *testing.T) {
		svc := find("Service")
		svc["metadata"].(map[string]any)["name"] = "selects-nothing"
		field(svc, "spec").(map[string]any)["selector"] = map[string]any{"app.kubernetes.io/name": "not-the-shop"}
		cp.MustDo(t, http.MethodPost, "/api/v1/namespaces/set0/services", svc, nil)
		pods := readyPods(t, cp, "set0", selectorOf(t, cp, "/apis/apps/v1/namespaces/set0/deployments/sale-seckill", "spec", "selector", "matchLabels"))
		time.Sleep(2 * time.Second) // the EndpointSlice controller's turn
		if eps := endpointsOf(t, cp, "set0", "selects-nothing"); len(pods) == 0 || slices.Equal(eps, pods) {
			t.Errorf("a Service selecting no shop: endpoints %v, the shop's pods %v: checkServing would pass it", eps, pods)
		}
	})
}
