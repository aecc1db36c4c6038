package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The chart's image holds the HAProxy root file system as it is (files,
// modes, symbolic links; no device nodes or pipes) with the controller
// binary over it, under the name the real-node tier's manifests use.
func TestBuildController(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, f := range []struct {
		name string
		mode os.FileMode
		data string
	}{
		{"usr/sbin/haproxy", 0o755, "haproxy"},
		{"usr/lib/x86_64-linux-gnu/libc.so.6", 0o644, "libc"},
		{"usr/bin/sleep", 0o755, "sleep"},
		{"usr/local/bin/other", 0o755, "other"},
	} {
		p := filepath.Join(root, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"tmp", "dev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o755|os.ModeSticky|0o022); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(root, "lib")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "dev/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "haproxy-k8s-sync")
	if err := os.WriteFile(bin, []byte("controller"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "controller-images.tar")
	if err := buildController(bin, root, out); err != nil {
		t.Fatal(err)
	}

	tag, err := name.NewTag(controllerImage)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("no %s in the tarball: %v", controllerImage, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"haproxy-k8s-sync"}) || !slices.Equal(cf.Config.Cmd, []string{"run"}) {
		t.Errorf("entrypoint %q command %q, want the Dockerfile's", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 2 {
		t.Errorf("%d layers (%v), want the root's and the binary's", len(layers), err)
	}

	files := map[string]*tar.Header{}
	data := map[string]string{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h // Extract drops a directory's "/"
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		data[strings.TrimSuffix(h.Name, "/")] = string(b)
	}
	for _, want := range []struct {
		name     string
		typ      byte
		mode     int64
		data     string // regular files
		linkname string // symbolic links
	}{
		{name: "usr/sbin/haproxy", typ: tar.TypeReg, mode: 0o755, data: "haproxy"},
		{name: "usr/lib/x86_64-linux-gnu/libc.so.6", typ: tar.TypeReg, mode: 0o644, data: "libc"},
		{name: "usr/bin/sleep", typ: tar.TypeReg, mode: 0o755, data: "sleep"},
		{name: "usr/local/bin/other", typ: tar.TypeReg, mode: 0o755, data: "other"},
		{name: controllerBin, typ: tar.TypeReg, mode: 0o755, data: "controller"},
		{name: "lib", typ: tar.TypeSymlink, mode: 0o777, linkname: "usr/lib"},
		{name: "tmp", typ: tar.TypeDir, mode: 0o1777},
		{name: "dev", typ: tar.TypeDir, mode: 0o755},
	} {
		h, ok := files[want.name]
		switch {
		case !ok:
			t.Errorf("%s: not in the image", want.name)
		case h.Typeflag != want.typ || h.Mode != want.mode || h.Linkname != want.linkname:
			t.Errorf("%s: type %c mode %o link %q, want %c %o %q", want.name, h.Typeflag, h.Mode, h.Linkname, want.typ, want.mode, want.linkname)
		case h.Uid != 0 || h.Gid != 0:
			t.Errorf("%s: owner %d:%d, want root", want.name, h.Uid, h.Gid)
		case data[want.name] != want.data:
			t.Errorf("%s: holds %q, want %q", want.name, data[want.name], want.data)
		}
	}
	if _, ok := files["dev/fifo"]; ok {
		t.Error("dev/fifo: a pipe in the image")
	}
}

// Without the HAProxy root (or with one holding no haproxy) nothing is
// written.
func TestBuildControllerRefuses(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, bin, root string }{
		{"no root", bin, ""},
		{"no binary", "", dir},
		{"root without haproxy", bin, dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.tar")
			if err := buildController(tc.bin, tc.root, out); err == nil {
				t.Error("built")
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("wrote the tarball")
			}
		})
	}
}
