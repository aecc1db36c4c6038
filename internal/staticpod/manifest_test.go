package staticpod

import (
	"errors"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func podOptions() Options {
	return Options{
		Image: Image{Ref: "docker.io/library/haproxy:3.0", Source: "built-in default"}, Config: []byte("cfg"),
		ConfigDir: "/etc/kubernetes/kube-apiserver-proxy",
		Listen:    netip.MustParseAddrPort("172.20.0.1:6443"), Monitor: netip.MustParseAddrPort("127.0.0.1:9444"),
	}
}

func TestPodValidation(t *testing.T) {
	live := &Live{Image: "haproxy-k8s-sync:1", Kubeconfig: "/etc/k.conf", StateDir: "/var/lib/x", RunDir: DefaultRunDir}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		err  error
	}{
		{"no image", func(o *Options) { o.Image = Image{} }, ErrInvalid},
		{"relative config dir", func(o *Options) { o.ConfigDir = "etc/x" }, ErrInvalid},
		{"relative CA file", func(o *Options) { o.Files = []NodeFile{{"apiserver-ca", "ca.crt"}} }, ErrInvalid},
		{"no monitor", func(o *Options) { o.Monitor = netip.AddrPort{} }, ErrInvalid},
		{"live with a relative kubeconfig", func(o *Options) { l := *live; l.Kubeconfig = "k.conf"; o.Live = &l }, ErrInvalid},
		{"live with a run directory HAProxy would misread", func(o *Options) { l := *live; l.RunDir = "/run/a b"; o.Live = &l }, ErrInvalid},
		{"live with a bad image", func(o *Options) { l := *live; l.Image = "a b"; o.Live = &l }, ErrInvalidImage},
		{"live", func(o *Options) { o.Live = live }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := podOptions()
			tc.mod(&o)
			_, err := Pod(o)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
		})
	}
}

func TestPodDetails(t *testing.T) {
	o := podOptions()
	o.Listen = netip.MustParseAddrPort("[fd00::1]:443")
	o.Monitor = netip.MustParseAddrPort("[::]:9444")
	ca := "/etc/kubernetes/pki/ca.crt"
	o.Files = []NodeFile{{"apiserver-ca", ca}}
	o.Live = &Live{Image: "haproxy-k8s-sync:1", Kubeconfig: "/etc/k.conf", StateDir: "/var/lib/x", RunDir: DefaultRunDir}
	pod, err := Pod(o)
	if err != nil {
		t.Fatal(err)
	}
	hap := pod.Spec.Containers[0]
	if sc := hap.SecurityContext; sc == nil || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "NET_BIND_SERVICE" {
		t.Errorf("listening below 1024 without NET_BIND_SERVICE: %+v", sc)
	}
	if h := hap.LivenessProbe.HTTPGet.Host; h != "::1" {
		t.Errorf("probe host %q for a monitor on every address, want ::1", h)
	}
	for _, c := range append(pod.Spec.Containers, pod.Spec.InitContainers...) {
		if !mounted(c, ca) {
			t.Errorf("container %s does not mount the CA file read-only", c.Name)
		}
	}
	if pod.Annotations[HashAnnotation] != Hash(o) {
		t.Error("hash annotation is not Hash(o)")
	}
	o2 := o
	o2.Live = &Live{Image: "haproxy-k8s-sync:2", Kubeconfig: "/etc/k.conf", StateDir: "/var/lib/x", RunDir: DefaultRunDir}
	if Hash(o2) == Hash(o) {
		t.Error("the controller's image does not change the hash")
	}
}

func mounted(c corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path && m.ReadOnly {
			return true
		}
	}
	return false
}
