package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/hack/image/internal/scratch"
)

// controllerImage is the image the chart runs in the real-node tier: every
// container of the chart's Pods (init, haproxy, sync) runs from it.
const controllerImage = "testimages.invalid/haproxy-k8s-sync:1"

// controllerBin is where the static controller binary lies in the image,
// as in the Dockerfile's image and `make image`'s.
const controllerBin = "usr/local/bin/haproxy-k8s-sync"

// buildController writes one docker-archive tarball holding
// controllerImage: a layer of the HAProxy root file system
// hack/haproxy-version.sh makes (Debian's haproxy with its own C library
// and coreutils: the chart's haproxy container runs `haproxy`, its preStop
// `sleep`, the controller `haproxy -c`), under a layer of the static
// controller binary. Entrypoint and command are the Dockerfile's; the user
// is the chart's securityContext's to set.
func buildController(bin, root, out string) error {
	if bin == "" || root == "" || out == "" {
		return fmt.Errorf("-controller, -haproxy-root and -o are required together")
	}
	if fi, err := os.Stat(filepath.Join(root, "usr/sbin/haproxy")); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("-haproxy-root %s: no usr/sbin/haproxy in it", root)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	base, err := scratch.DirLayer(root)
	if err != nil {
		return err
	}
	top, err := scratch.Layer(
		scratch.Entry{Name: "usr/", Mode: 0o755},
		scratch.Entry{Name: "usr/local/", Mode: 0o755},
		scratch.Entry{Name: "usr/local/bin/", Mode: 0o755},
		scratch.Entry{Name: controllerBin, Mode: 0o755, Data: exe})
	if err != nil {
		return err
	}
	img, err := scratch.Layered([]v1.Layer{base, top}, func(c *v1.Config) {
		c.Entrypoint = []string{"haproxy-k8s-sync"}
		c.Cmd = []string{"run"}
		c.Env = []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	})
	if err != nil {
		return err
	}
	tag, err := name.NewTag(controllerImage)
	if err != nil {
		return err
	}
	return writeImages(map[name.Reference]v1.Image{tag: img}, out)
}
