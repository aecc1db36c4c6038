// Command testimage packages the container images of the real-node test
// tier (internal/testing/nodes) without a registry or a container daemon
// (go-containerregistry): both hold one static agnhost binary (built by
// hack/testbin.sh from k8s.io/kubernetes) at /agnhost, on a scratch base.
//
//   - NAME/agnhost:TAG runs `/agnhost` (the manifests give `netexec ...`);
//   - NAME/pause:TAG runs `/agnhost pause`: the Pod sandbox, which
//     containerd's sandbox_image names, so nothing is ever pulled.
//
// The result is one docker-archive tarball holding both, which
// `ctr -n k8s.io images import` reads.
//
//	testimage -agnhost DIR/agnhost -o DIR/test-images.tar
//
// With -echo-basic and -coredns it packs instead the images the Gateway
// API conformance suite's manifests name (conformance.go).
//
//	testimage -echo-basic DIR/echo-basic -coredns DIR/coredns -o DIR/conformance-images.tar
//
// With -controller and -haproxy-root it packs the image the chart runs
// in (controller.go): the static controller over an HAProxy root file
// system.
//
//	testimage -controller DIR/haproxy-k8s-sync -haproxy-root ROOT -o DIR/controller-images.tar
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/hack/image/internal/scratch"
)

// The names the manifests of internal/testing/nodes use (its constants
// AgnhostImage and PauseImage must match). The .invalid domain can never
// be pulled from.
const (
	agnhostImage = "testimages.invalid/agnhost:1"
	pauseImage   = "testimages.invalid/pause:1"
)

func main() {
	bin := flag.String("agnhost", "", "static agnhost binary (CGO_ENABLED=0)")
	out := flag.String("o", "", "output tarball")
	echo := flag.String("echo-basic", "", "static echo-basic binary (conformance images)")
	coredns := flag.String("coredns", "", "static coredns binary (conformance images)")
	controller := flag.String("controller", "", "static haproxy-k8s-sync binary (the chart's image)")
	haproxyRoot := flag.String("haproxy-root", "", "root file system holding usr/sbin/haproxy (the chart's image)")
	flag.Parse()
	var err error
	if *controller != "" || *haproxyRoot != "" {
		err = buildController(*controller, *haproxyRoot, *out)
	} else if *echo != "" || *coredns != "" {
		err = buildConformance(*echo, *coredns, *out)
	} else {
		err = build(*bin, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testimage:", err)
		os.Exit(1)
	}
}

func build(bin, out string) error {
	if bin == "" || out == "" {
		return fmt.Errorf("-agnhost and -o are required")
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	layer, err := binaryLayer("agnhost", exe)
	if err != nil {
		return err
	}
	images := map[name.Reference]v1.Image{}
	for ref, entrypoint := range map[string][]string{
		agnhostImage: {"/agnhost"},
		pauseImage:   {"/agnhost", "pause"},
	} {
		if err := addImage(images, ref, layer, entrypoint); err != nil {
			return err
		}
	}
	return writeImages(images, out)
}

// addImage puts the image of layer, run as entrypoint, into images as ref.
func addImage(images map[name.Reference]v1.Image, ref string, layer v1.Layer, entrypoint []string) error {
	img, err := scratch.Image(layer, func(c *v1.Config) {
		c.Entrypoint = entrypoint
		c.Env = []string{"PATH=/"}
	})
	if err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	images[tag] = img
	return nil
}

// writeImages writes images as one docker-archive tarball.
func writeImages(images map[name.Reference]v1.Image, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := tarball.MultiRefWrite(images, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// binaryLayer is one layer: /NAME, /tmp, and an empty /etc and /dev
// (the runtime mounts /etc/hosts, /etc/hostname and /etc/resolv.conf).
func binaryLayer(name string, exe []byte) (v1.Layer, error) {
	return scratch.Layer(
		scratch.Entry{Name: "etc/", Mode: 0o755},
		scratch.Entry{Name: "tmp/", Mode: 0o1777},
		scratch.Entry{Name: "dev/", Mode: 0o755},
		scratch.Entry{Name: name, Mode: 0o755, Data: exe})
}
