// Command image builds the controller's OCI image without a container
// daemon (go-containerregistry): a scratch base, one layer holding the
// static binary and a passwd entry for a non-root user, entrypoint the
// binary, default command `run`. The result is a tarball `docker load` and
// `podman load` read, or that `crane push` uploads.
//
// This image has no HAProxy, so it suits the Data Plane API mode; the
// HAProxy sidecar mode validates configs with `haproxy -c` and needs the
// Dockerfile's image (HAProxy's official image as base).
//
//	image -binary bin/haproxy-k8s-sync -tag haproxy-k8s-sync:dev -o bin/image.tar
//	image -inspect bin/image.tar   # prints the config and the files (tests)
package main

import (
	"archive/tar"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/hack/image/internal/scratch"
)

const (
	binPath = "usr/local/bin/haproxy-k8s-sync"
	user    = "65532:65532"
)

func main() {
	bin := flag.String("binary", "", "static haproxy-k8s-sync binary (CGO_ENABLED=0)")
	tag := flag.String("tag", "haproxy-k8s-sync:dev", "image reference written into the tarball")
	out := flag.String("o", "", "output tarball")
	inspect := flag.String("inspect", "", "print the config and files of this tarball instead")
	flag.Parse()
	var err error
	if *inspect != "" {
		err = inspectImage(*inspect)
	} else {
		err = build(*bin, *tag, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(bin, tag, out string) error {
	if bin == "" || out == "" {
		return fmt.Errorf("-binary and -o are required")
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	layer, err := scratch.Layer(
		scratch.Entry{Name: "etc/", Mode: 0o755},
		scratch.Entry{Name: "usr/", Mode: 0o755},
		scratch.Entry{Name: "usr/local/", Mode: 0o755},
		scratch.Entry{Name: "usr/local/bin/", Mode: 0o755},
		scratch.Entry{Name: "tmp/", Mode: 0o1777},
		scratch.Entry{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n")},
		scratch.Entry{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		scratch.Entry{Name: binPath, Mode: 0o755, Data: exe})
	if err != nil {
		return err
	}
	img, err := scratch.Image(layer, func(c *v1.Config) {
		c.Entrypoint = []string{"haproxy-k8s-sync"} // on PATH, as in the Dockerfile
		c.Cmd = []string{"run"}
		c.User = user
		c.Env = []string{"PATH=/usr/local/bin"}
	})
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

func inspectImage(path string) error {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	files := map[string]int64{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			files[h.Name] = h.Mode
		}
		rc.Close()
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"entrypoint": cf.Config.Entrypoint, "cmd": cf.Config.Cmd, "user": cf.Config.User, "os": cf.OS, "files": files,
	})
}
