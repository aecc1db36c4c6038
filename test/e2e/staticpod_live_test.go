package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserverlb"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/staticpod"
)

// `render static-pod --live`: the pod's three containers run as the
// manifest says (the seed init container, HAProxy, the controller; the
// pod's directories in a temporary one). The controller takes the seed
// over, and an apiserver added to or removed from the cluster's list
// reaches HAProxy through the Runtime API: no reload, and the files on
// the node do not change.
func TestStaticPodLiveFollowsTheCluster(t *testing.T) {
	l := newStaticPodLab(t)
	client := l.client
	listen, monitor, extra, metricsAddr := l.addr(), l.addr(), l.addr(), l.addr()
	nodeDir := filepath.Join(l.dir, "node") // --config-dir and -o: the node's files
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "apiservers"},
		Data: map[string]string{"servers": l.api + "\n"}}
	if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run, state := filepath.Join(l.dir, "run"), filepath.Join(l.dir, "state") // the pod's emptyDir, the node's state directory
	pod := l.render(nodeDir, "--listen", listen, "--monitor-address", monitor, "--bootstrap-servers", l.api,
		"--shared-ingress", "--live", "--live-kubeconfig", l.kube.KubeconfigPath, "--run-dir", run, "--state-dir", state,
		"--apiserver-sources", "configmap,static", "--apiserver-configmap", "kube-system/apiservers",
		"--metrics-address", metricsAddr)
	cfgBefore, _ := os.ReadFile(filepath.Join(nodeDir, staticpod.ConfigFile))

	// The kubelet creates the emptyDir and the DirectoryOrCreate hostPath.
	for _, d := range []string{run, state} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	seed := pod.Spec.InitContainers[0]
	if code := cli.Main(append([]string{"haproxy-k8s-sync"}, seed.Args...), nil, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("seed init container exited %d", code)
	}
	startAsManifest(t, pod.Spec.Containers[0])
	rd := staticpod.RunDir(run)
	master := haproxy.NewMaster(rd.MasterSocket())
	e := &env{t: t}
	var start haproxy.Proc
	e.eventually("HAProxy runs the seed", func() (err error) {
		start, err = master.ShowProc(bg)
		return err
	})

	sync := pod.Spec.Containers[1].Args
	if sync[0] != "run" {
		t.Fatalf("sync container runs %v", sync)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	var log haproxytest.LockedBuffer
	go func() { done <- cli.Run(ctx, append(sync[1:], "--haproxy-bin", haproxytest.Bin()), os.Getenv, &log) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})

	servers := func(want ...string) func() error {
		return func() error {
			// A connection of its own: one opened before a reload would
			// still talk to the old worker.
			runtime := haproxy.NewRuntime(rd.StatsSocket())
			defer runtime.Close()
			out, err := runtime.Exec(bg, []string{"show servers state " + apiserverlb.BackendName})
			if err != nil {
				return err
			}
			var got []string
			for _, line := range strings.Split(out[0], "\n") {
				f := strings.Fields(line)
				// be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state ... srv_port at 18.
				// In service: no forced, inherited or resolution maintenance
				// (0x01, 0x02, 0x20; 0x04 only says the config had "disabled").
				if len(f) < 19 || f[1] != apiserverlb.BackendName {
					continue
				}
				if admin, err := strconv.Atoi(f[6]); err == nil && admin&0x23 == 0 {
					got = append(got, f[4]+":"+f[18])
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(want))
			if !slices.Equal(got, want) {
				return fmt.Errorf("HAProxy serves %v, want %v\n%s", got, want, out[0])
			}
			return nil
		}
	}
	e.eventually("the seed's server", servers(l.api))
	e.eventually("the controller's /readyz on the rendered address", httpStatus("http://"+metricsAddr+"/readyz", 200))

	// An apiserver joins the cluster's list, then leaves it.
	for _, list := range [][]string{{l.api, extra}, {l.api}} {
		cm.Data["servers"] = strings.Join(list, "\n")
		began := time.Now()
		if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Update(bg, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually(fmt.Sprintf("HAProxy serves %v", list), servers(list...))
		t.Logf("ConfigMap %v to HAProxy serving it: %v (polled every 20ms)", list, time.Since(began).Round(time.Millisecond))
	}
	after, err := master.ShowProc(bg)
	if err != nil {
		t.Fatal(err)
	}
	if after.Reloads != start.Reloads {
		t.Errorf("HAProxy reloaded %d times: taking over the seed and server changes need none", after.Reloads-start.Reloads)
	}
	if cfgAfter, _ := os.ReadFile(filepath.Join(nodeDir, staticpod.ConfigFile)); !bytes.Equal(cfgBefore, cfgAfter) {
		t.Error("the node's config changed: a rollout would be needed")
	}
}
