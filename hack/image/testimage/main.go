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
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
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
	flag.Parse()
	var err error
	if *echo != "" || *coredns != "" {
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
	base, err := binaryImage("agnhost", exe)
	if err != nil {
		return err
	}
	images := map[name.Reference]v1.Image{}
	for ref, entrypoint := range map[string][]string{
		agnhostImage: {"/agnhost"},
		pauseImage:   {"/agnhost", "pause"},
	} {
		if err := addImage(images, ref, base, entrypoint); err != nil {
			return err
		}
	}
	return writeImages(images, out)
}

// binaryImage is a scratch OCI image of one layer holding exe at /NAME.
func binaryImage(name string, exe []byte) (v1.Image, error) {
	layer, err := binaryLayer(name, exe)
	if err != nil {
		return nil, err
	}
	base, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	return mutate.ConfigMediaType(base, types.OCIConfigJSON), nil
}

// addImage tags base, run as entrypoint, as ref in images.
func addImage(images map[name.Reference]v1.Image, ref string, base v1.Image, entrypoint []string) error {
	img, err := withEntrypoint(base, entrypoint)
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

// binaryLayer is one layer: /NAME, /tmp, and an empty /etc/hosts-less
// root (the runtime mounts /etc/hosts, /etc/hostname and /etc/resolv.conf).
func binaryLayer(name string, exe []byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range []struct {
		name string
		mode int64
	}{{"etc/", 0o755}, {"tmp/", 0o1777}, {"dev/", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(exe)), ModTime: epoch}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(exe); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

func withEntrypoint(base v1.Image, entrypoint []string) (v1.Image, error) {
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: time.Unix(0, 0)}
	cf.Config.Entrypoint = entrypoint
	cf.Config.Env = []string{"PATH=/"}
	return mutate.ConfigFile(base, cf)
}
