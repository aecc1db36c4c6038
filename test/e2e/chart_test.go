package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

const chart = "../../charts/haproxy-k8s-sync"

// find returns the one rendered object of kind (and name, if not empty).
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	slices.Sort(out)
	return out
}

// container returns the named container of a workload's pod template.
func container(t *testing.T, w *unstructured.Unstructured, name string, initc bool) map[string]any {
	t.Helper()
	field := "containers"
	if initc {
		field = "initContainers"
	}
	cs, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", field)
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("%s has no container %s", w.GetName(), name)
	return nil
}

func args(c map[string]any) []string {
	var out []string
	for _, a := range c["args"].([]any) {
		out = append(out, fmt.Sprint(a))
	}
	return out
}

func hasAll(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %q missing in %q", what, w, got)
		}
	}
}

// Every mode of the chart renders, passes `helm lint`, matches its golden
// file and is accepted by a real kube-apiserver (server-side dry run of
// every object); the seed's exact command renders a Deployment running the
// Data Plane API driver for that backend.
func TestHelmChartModes(t *testing.T) {
	helm := tool(t, "helm")
	kube := kubeapi.Start(t)
	cases := []struct {
		name  string
		set   []string
		check func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{"services-daemonset", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			ds := find(t, objs, "DaemonSet", "")
			if hn, _, _ := unstructured.NestedBool(ds.Object, "spec", "template", "spec", "hostNetwork"); !hn {
				t.Error("DaemonSet not on the host network")
			}
			init := container(t, ds, "init", true)
			if a := args(init); a[0] != "init" {
				t.Errorf("init container runs %q", a)
			}
			hap := container(t, ds, "haproxy", false)
			if _, ok := hap["livenessProbe"]; !ok {
				t.Error("no liveness probe on HAProxy")
			}
			// glibc's malloc on huge pages by default (docs/install.md).
			if env := fmt.Sprint(hap["env"]); !strings.Contains(env, "GLIBC_TUNABLES") || !strings.Contains(env, "glibc.malloc.hugetlb=1") {
				t.Errorf("HAProxy's environment %s does not ask for huge pages", env)
			}
			sync := container(t, ds, "sync", false)
			hasAll(t, "sync args", args(sync), "run", "--leader-elect", "--master-socket=/run/haproxy-k8s-sync/master.sock", "--metrics-address=:9742",
				"--node-check=http:10256/healthz", "--listeners=auto")
			rules, _, _ := unstructured.NestedSlice(find(t, objs, "ClusterRole", "").Object, "rules")
			if strings.Contains(fmt.Sprint(rules), "services/status") {
				t.Error("services/status granted without publish addresses")
			}
		}},
		{"services-deployment", []string{"services.kind=Deployment", "services.hostNetwork=false", "services.publishAddresses={192.0.2.10}",
			"podDisruptionBudget.enabled=true", "metrics.serviceMonitor.enabled=true", "extraArgs={--default-balance=leastconn}", "leaderElection.enabled=false",
			"stats.enabled=true", "stats.authSecret=hks-stats", "services.nodeCheck=tcp:10250", "services.haproxy.env=null"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				d := find(t, objs, "Deployment", "")
				if env, ok := container(t, d, "haproxy", false)["env"]; ok {
					t.Errorf("HAProxy's environment %v rendered although services.haproxy.env is null", env)
				}
				sync := container(t, d, "sync", false)
				hasAll(t, "sync args", args(sync), "--publish-address=192.0.2.10", "--default-balance=leastconn", "--monitor-address=0.0.0.0:8404", "--node-check=tcp:10250",
					"--stats-address=:8405", "--stats-auth-file=/etc/haproxy-k8s-sync/stats/auth")
				if slices.Contains(args(sync), "--leader-elect") {
					t.Error("leader election on although disabled")
				}
				rules, _, _ := unstructured.NestedSlice(find(t, objs, "ClusterRole", "").Object, "rules")
				if !strings.Contains(fmt.Sprint(rules), "services/status") {
					t.Error("services/status not granted with publish addresses")
				}
				find(t, objs, "PodDisruptionBudget", "")
				find(t, objs, "ServiceMonitor", "")
				for _, o := range objs {
					if o.GetKind() == "Role" {
						t.Error("a Lease Role without leader election")
					}
				}
			}},
		// Address pools: the flag, and exactly the rules it needs.
		// BGP: the flags, the password's Secret mounted where the flag names it.
		{"services-announce-bgp", []string{"services.announce.bgp.asn=4200000000", "services.announce.bgp.peers={192.0.2.1@65000,[2001:db8::1]:1179}",
			"services.announce.bgp.peerASN=65000", "services.announce.bgp.bfd=100ms", "services.announce.bgp.restartTime=0s", "services.announce.bgp.passwordSecret=bgp-pw"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				ds := find(t, objs, "DaemonSet", "")
				sync := container(t, ds, "sync", false)
				hasAll(t, "sync args", args(sync), "--announce=bgp", "--announce-bgp-asn=4200000000", "--announce-bgp-peers=192.0.2.1@65000",
					"--announce-bgp-peers=[2001:db8::1]:1179", "--announce-bgp-peer-asn=65000", "--announce-bgp-bfd=100ms", "--announce-bgp-restart-time=0s",
					"--announce-bgp-password-file=/etc/haproxy-k8s-sync/bgp/password")
				if !strings.Contains(fmt.Sprint(sync["volumeMounts"]), "/etc/haproxy-k8s-sync/bgp") || !strings.Contains(fmt.Sprint(ds.Object), "bgp-pw") {
					t.Error("the password's Secret not mounted")
				}
				handsOver(t, ds)
			}},
		// keepalived: the flags, the shared volume, the sidecar with only the
		// capabilities VRRP needs, the controller without any.
		{"services-announce-keepalived", []string{"services.announce.keepalived.interface=eth1", "services.announce.keepalived.vrid=60",
			"services.announce.keepalived.advert=100ms", "services.announce.keepalived.image.repository=example.com/keepalived", "services.announce.keepalived.image.tag=2.2.7"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				ds := find(t, objs, "DaemonSet", "")
				sync := container(t, ds, "sync", false)
				hasAll(t, "sync args", args(sync), "--announce=keepalived", "--announce-interface=eth1", "--announce-keepalived-vrid=60",
					"--announce-keepalived-advert=100ms", "--announce-keepalived-config=/etc/keepalived/keepalived.conf",
					"--announce-keepalived-health-file=/etc/keepalived/health")
				if !strings.Contains(fmt.Sprint(sync["volumeMounts"]), "/etc/keepalived") {
					t.Error("the controller does not write where keepalived reads")
				}
				if caps := fmt.Sprint(sync["securityContext"]); strings.Contains(caps, "NET_ADMIN") {
					t.Errorf("the controller got NET_ADMIN: %s", caps)
				}
				ka := container(t, ds, "keepalived", false)
				if ka["image"] != "example.com/keepalived:2.2.7" {
					t.Errorf("keepalived image %v", ka["image"])
				}
				caps, _, _ := unstructured.NestedStringSlice(ka, "securityContext", "capabilities", "add")
				if !slices.Equal(caps, []string{"NET_ADMIN", "NET_RAW"}) {
					t.Errorf("keepalived capabilities %v, want NET_ADMIN and NET_RAW only", caps)
				}
				if !strings.Contains(fmt.Sprint(ka["volumeMounts"]), "/etc/keepalived") {
					t.Error("keepalived does not read where the controller writes")
				}
			}},
		// layer 2: the flags, the group's key from its Secret, and the
		// controller started as root with the four capabilities it needs
		// to hand NET_ADMIN and NET_RAW to itself as the pod's user.
		{"services-announce-l2", []string{"services.announce.l2.interface=eth1", "services.announce.l2.peers={192.0.2.11,192.0.2.12:7947}",
			"services.announce.l2.keySecret=l2-key", "services.announce.l2.restartTime=20s"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				ds := find(t, objs, "DaemonSet", "")
				sync := container(t, ds, "sync", false)
				hasAll(t, "sync args", args(sync), "--announce=l2", "--announce-interface=eth1", "--announce-peers=192.0.2.11",
					"--announce-peers=192.0.2.12:7947", "--announce-key-file=/etc/haproxy-k8s-sync/l2/key", "--announce-restart-time=20s",
					"--announce-run-as=99:99", "--announce-name=$(NODE_NAME)", "--listeners=ports")
				if env := fmt.Sprint(sync["env"]); !strings.Contains(env, "NODE_NAME") || !strings.Contains(env, "spec.nodeName") {
					t.Errorf("--announce-name's NODE_NAME is not the Pod's node: %v", env)
				}
				caps, _, _ := unstructured.NestedStringSlice(sync, "securityContext", "capabilities", "add")
				if !slices.Equal(caps, []string{"NET_ADMIN", "NET_RAW", "SETUID", "SETGID"}) {
					t.Errorf("the controller's capabilities %v, want NET_ADMIN, NET_RAW, SETUID and SETGID only", caps)
				}
				if esc, _, _ := unstructured.NestedBool(sync, "securityContext", "allowPrivilegeEscalation"); esc {
					t.Error("the controller may escalate privileges")
				}
				hap := container(t, ds, "haproxy", false)
				if caps := fmt.Sprint(hap["securityContext"]); strings.Contains(caps, "NET_ADMIN") {
					t.Errorf("HAProxy got NET_ADMIN: %s", caps)
				}
				if !strings.Contains(fmt.Sprint(ds.Object), "secretName:l2-key") {
					t.Error("the group's key is not mounted from its Secret")
				}
				handsOver(t, ds)
			}},
		{"services-address-pools", []string{"services.addressPools=true", "services.claimQPS=50", "services.claimBurst=100"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				ds := find(t, objs, "DaemonSet", "")
				hasAll(t, "sync args", args(container(t, ds, "sync", false)), "--address-pools", "--claim-qps=50", "--claim-burst=100")
				rules := fmt.Sprint(unstructured.NestedSlice(find(t, objs, "ClusterRole", "").Object, "rules"))
				for _, want := range []string{"services/status", "addresspools", "addresspools/status", "namespaces"} {
					if !strings.Contains(rules, want) {
						t.Errorf("ClusterRole lacks %s: %s", want, rules)
					}
				}
			}},
		// The seed's exact command (release haproxy-sync).
		{"seed-dataplane", []string{"env.haproxy.dataplaneURL=http://haproxy:5555", "env.haproxy.backendName=be_ingress_https"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				d := find(t, objs, "Deployment", "")
				sync := container(t, d, "sync", false)
				hasAll(t, "sync args", args(sync), "run", "--driver=dataplane")
				cm := find(t, objs, "ConfigMap", "")
				data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
				if data["HAPROXY_DATAPLANE_URL"] != "http://haproxy:5555" || data["HAPROXY_BACKEND_NAME"] != "be_ingress_https" {
					t.Errorf("ConfigMap data %v", data)
				}
				if !strings.Contains(fmt.Sprint(sync["envFrom"]), cm.GetName()) {
					t.Errorf("the Deployment does not read ConfigMap %s: %v", cm.GetName(), sync["envFrom"])
				}
				if slices.Contains(kinds(objs), "Secret") || slices.Contains(kinds(objs), "DaemonSet") {
					t.Errorf("unexpected objects: %v", kinds(objs))
				}
			}},
		{"dataplane-secret", []string{"mode=dataplane", "env.haproxy.dataplaneURL=https://haproxy:5555", "env.haproxy.dataplaneUsername=admin",
			"env.haproxy.dataplanePassword=s3cret", "env.haproxy.backendPort=30443", "env.haproxy.sendProxyV2=true"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				s := find(t, objs, "Secret", "")
				if !strings.Contains(fmt.Sprint(s.Object["stringData"]), "s3cret") {
					t.Error("password not in the chart's Secret")
				}
				cm := find(t, objs, "ConfigMap", "")
				if strings.Contains(fmt.Sprint(cm.Object), "s3cret") {
					t.Error("password in the ConfigMap")
				}
			}},
		{"apiserver", []string{"mode=apiserver", "apiserver.bootstrapServers={192.0.2.1:6443,192.0.2.2:6443}"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				ds := find(t, objs, "DaemonSet", "")
				sync := container(t, ds, "sync", false)
				hasAll(t, "sync args", args(sync), "run", "--mode=apiserver", "--listen=:8443", "--bootstrap-servers=192.0.2.1:6443,192.0.2.2:6443")
				if slices.Contains(args(sync), "--leader-elect") {
					t.Error("leader election in the apiserver mode")
				}
				sel, _, _ := unstructured.NestedStringMap(ds.Object, "spec", "template", "spec", "nodeSelector")
				if _, ok := sel["node-role.kubernetes.io/control-plane"]; !ok {
					t.Errorf("not on control-plane nodes: %v", sel)
				}
				rules, _, _ := unstructured.NestedSlice(find(t, objs, "ClusterRole", "").Object, "rules")
				if strings.Contains(fmt.Sprint(rules), "services") || strings.Contains(fmt.Sprint(rules), "events") {
					t.Errorf("apiserver mode granted more than Nodes: %v", rules)
				}
				find(t, objs, "Role", "haproxy-sync-haproxy-k8s-sync-endpointslices")
			}},
		{"gateway", []string{"mode=gateway", "services.bindAddresses={192.0.2.10}"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				ds := find(t, objs, "DaemonSet", "")
				sync := container(t, ds, "sync", false)
				hasAll(t, "sync args", args(sync), "run", "--mode=gateway", "--leader-elect", "--bind-address=192.0.2.10", "--master-socket=/run/haproxy-k8s-sync/master.sock")
				for _, a := range args(sync) {
					if strings.HasPrefix(a, "--class") || strings.HasPrefix(a, "--node-check") || strings.HasPrefix(a, "--publish-address") {
						t.Errorf("a Services-mode flag in the gateway mode: %s", a)
					}
				}
				rules := fmt.Sprint(unstructuredRules(t, objs))
				for _, want := range []string{"gateways/status", "tcproutes", "referencegrants", "endpointslices"} {
					if !strings.Contains(rules, want) {
						t.Errorf("gateway mode lacks %s: %v", want, rules)
					}
				}
				if strings.Contains(rules, "nodes") || strings.Contains(rules, "events") || strings.Contains(rules, "services/status") {
					t.Errorf("gateway mode granted more than it needs: %v", rules)
				}
				find(t, objs, "Role", "")
				if strings.Contains(rules, "addresspools") || slices.Contains(args(sync), "--address-pools") {
					t.Errorf("AddressPools without services.addressPools: %v", rules)
				}
			}},
		// Ingresses beside the Gateways: the flags, and exactly
		// deploy/gateway/ingress-rbac.yaml's rules.
		{"gateway-ingress", []string{"mode=gateway", "ingress.class=haproxy", "ingress.defaultCertificate=ingress/default"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				a := args(container(t, find(t, objs, "DaemonSet", ""), "sync", false))
				hasAll(t, "sync args", a, "--mode=gateway", "--ingress-class=haproxy", "--ingress-http-port=80", "--ingress-https-port=443",
					"--ingress-default-certificate=ingress/default")
				rules := fmt.Sprint(unstructuredRules(t, objs))
				for _, want := range []string{"ingresses ingressclasses", "ingresses/status", "events"} {
					if !strings.Contains(rules, want) {
						t.Errorf("gateway mode with Ingresses lacks %s: %v", want, rules)
					}
				}
			}},
		// Gateways' own addresses: the flag, and reading the pools only.
		{"gateway-address-pools", []string{"mode=gateway", "services.addressPools=true"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				a := args(container(t, find(t, objs, "DaemonSet", ""), "sync", false))
				hasAll(t, "sync args", a, "--mode=gateway", "--address-pools")
				for _, f := range a {
					if strings.HasPrefix(f, "--claim-") {
						t.Errorf("%s passed without services.claimQPS/claimBurst set", f)
					}
				}
				rules := fmt.Sprint(unstructuredRules(t, objs))
				if !strings.Contains(rules, "addresspools") || strings.Contains(rules, "addresspools/status") || strings.Contains(rules, "services/status") {
					t.Errorf("gateway mode with address pools: %v", rules)
				}
			}},
		{"dataplane-existing-secret", []string{"env.haproxy.dataplaneURL=http://haproxy:5555", "env.existingSecret=dpapi"},
			func(t *testing.T, objs []*unstructured.Unstructured) {
				if slices.Contains(kinds(objs), "Secret") {
					t.Error("a Secret rendered although an existing one is named")
				}
				sync := container(t, find(t, objs, "Deployment", ""), "sync", false)
				if !strings.Contains(fmt.Sprint(sync["env"]), "dpapi") {
					t.Errorf("env does not read Secret dpapi: %v", sync["env"])
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sets []string
			for _, s := range tc.set {
				sets = append(sets, "--set", s)
			}
			if _, err := run(t, helm, append([]string{"lint", "--strict", chart}, sets...)...); err != nil {
				t.Fatalf("helm lint: %v", err)
			}
			out, err := run(t, helm, append([]string{"template", "haproxy-sync", chart, "--namespace", "ingress-nginx"}, sets...)...)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			golden.Assert(t, "chart-"+tc.name+".yaml", out)
			objs := objects(t, out)
			tc.check(t, objs)
			if skipped := dryRun(t, kube, objs); len(skipped) > 0 {
				t.Logf("not served by a bare apiserver, checked above only: %v", skipped)
			}
		})
	}
}

func unstructuredRules(t *testing.T, objs []*unstructured.Unstructured) []any {
	rules, _, _ := unstructured.NestedSlice(find(t, objs, "ClusterRole", "").Object, "rules")
	return rules
}

// values.schema.json rejects unknown and ill-typed values before anything
// renders.
func TestHelmChartSchemaRejects(t *testing.T) {
	helm := tool(t, "helm")
	for _, set := range []string{
		"replicas=3",                                    // unknown (top level)
		"services.hostnetwork=true",                     // unknown (misspelt)
		"services.kind=StatefulSet",                     // not a workload the chart knows
		"metrics.port=http",                             // ill-typed
		"services.publishAddresses={lb.example}",        // not an IP
		"mode=bogus",                                    // no such mode
		"apiserver.sources={dns}",                       // no such source
		"env.haproxy.backendName=be x",                  // not a backend name
		"extraArgs={oops}",                              // not a flag
		"services.nodeCheck=http:10256/a b",             // not a node check
		"services.claimQPS=fast",                        // ill-typed
		"services.claimBurst=0",                         // below 1
		"mode=dataplane",                                // dataplane without its URL
		"services.announce.bgp.peers={router1}",         // not an address
		"services.announce.bgp.peers={192.0.2.1}",       // no AS number for the node
		"services.announce.bgp.bfd=fast",                // not a duration
		"services.announce.keepalived.interface=eth0",   // keepalived without its image
		"services.announce.keepalived.advert=fast",      // not a duration
		"services.announce.keepalived.interface=eth0 0", // not an interface name
		"services.announce.keepalived.vrid=255",         // the IPv6 instance takes the next
		"services.haproxy.env[0].value=x",               // an environment entry without its name
		"services.haproxy.env[0].name=A B",              // not a variable name
	} {
		t.Run(set, func(t *testing.T) {
			out, err := run(t, helm, "template", "x", chart, "--set", set)
			if err == nil {
				t.Fatalf("accepted; rendered:\n%s", out)
			}
			if !strings.Contains(err.Error(), "schema") && !strings.Contains(err.Error(), "needs") {
				t.Errorf("error does not name the schema: %v", err)
			}
		})
	}
}

// handsOver checks that a Pod of ds going away hands its node's
// addresses over before its HAProxy stops: the controller reads a drain
// file that its preStop hook creates (then waits, so that the health
// gate sees it before the stop), and HAProxy's preStop hook waits
// longer than that before HAProxy stops (docs/addresses.md).
func handsOver(t *testing.T, ds *unstructured.Unstructured) {
	t.Helper()
	sync, hap := container(t, ds, "sync", false), container(t, ds, "haproxy", false)
	hasAll(t, "sync args", args(sync), "--announce-drain-file=/run/haproxy-k8s-sync/drain")
	syncStop, _, _ := unstructured.NestedStringSlice(sync, "lifecycle", "preStop", "exec", "command")
	if len(syncStop) != 3 || !strings.Contains(syncStop[2], "touch /run/haproxy-k8s-sync/drain") || !strings.Contains(syncStop[2], "sleep 2") {
		t.Errorf("the controller's preStop %q: want the drain file created, then 2 s", syncStop)
	}
	hapStop, _, _ := unstructured.NestedStringSlice(hap, "lifecycle", "preStop", "exec", "command")
	if !slices.Equal(hapStop, []string{"sleep", "3"}) {
		t.Errorf("HAProxy's preStop %q: want it to serve 3 s more, past the controller's 2", hapStop)
	}
}
