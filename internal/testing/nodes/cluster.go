package nodes

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// What a suite written for a whole cluster needs beyond the tier: Pods
// placed on nodes without a nodeName of their own, and the test process
// itself on the underlay, so that its clients reach the load balancer's
// address directly.

// Bind places every Pod without a node on the tier's nodes in turn (a
// Binding, as kube-scheduler writes it), until ctx ends. The tier runs no
// kube-scheduler (hack/testbin builds none): this is the one decision it
// makes, with no filtering or scoring; manifests that need more name
// their node.
func (t *Tier) Bind(ctx context.Context, tb testing.TB) {
	f := informers.NewSharedInformerFactoryWithOptions(t.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" }))
	inf := f.Core().V1().Pods().Informer()
	var next atomic.Int64
	bind := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName != "" || p.DeletionTimestamp != nil || len(p.Spec.SchedulingGates) > 0 {
			return
		}
		n := t.Nodes[int(next.Add(1)-1)%len(t.Nodes)]
		err := t.Client.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: n.Name},
		}, metav1.CreateOptions{})
		if err != nil && ctx.Err() == nil {
			tb.Logf("nodes: bind %s/%s to %s: %v", p.Namespace, p.Name, n.Name, err)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: bind, UpdateFunc: func(_, o any) { bind(o) }}); err != nil {
		tb.Fatalf("nodes: binder: %v", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		tb.Fatalf("nodes: binder: cache not synced")
	}
}

// LinkCaller puts the calling process's network namespace on the
// underlay at addr (a 198.18.0.0/24 address no one else has, e.g.
// 198.18.0.4), through a veth into the bridge, and routes extra prefixes
// (e.g. addresses the load balancer's namespace serves) via the load
// balancer. It refuses to run in a namespace with any interface but
// loopback (the machine's own, say): a process that calls it must live in
// a fresh namespace its test made (see test/conformance's TestMain), so
// the host's interfaces are never touched. The veth goes with the underlay namespace.
func (t *Tier) LinkCaller(addr string, viaLB ...string) error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return fmt.Errorf("nodes: LinkCaller in a network namespace with interface %s (the machine's own?): refused; only a fresh namespace is linked", i.Name)
		}
	}
	dev := t.prefix + "x"
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", dev, "type", "veth", "peer", "name", "x", "netns", t.Underlay},
		{"-n", t.Underlay, "link", "set", "x", "master", "br0"},
		{"-n", t.Underlay, "link", "set", "x", "up"},
		{"addr", "add", addr + "/24", "dev", dev},
		{"link", "set", dev, "up"},
	}
	for _, p := range viaLB {
		steps = append(steps, []string{"route", "add", p, "via", LBAddr})
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return err
		}
	}
	return nil
}
