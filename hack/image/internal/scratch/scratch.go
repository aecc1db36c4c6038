// Package scratch builds OCI images on no base image and without a
// container daemon (go-containerregistry): one layer of the entries given,
// everything dated the Unix epoch so that a build is reproducible, for
// linux on this machine's architecture; DirLayer makes a layer of a
// directory tree (dir.go). The controller's image
// (hack/image) and the test images (hack/image/testimage) are built with
// it.
package scratch

import (
	"archive/tar"
	"bytes"
	"io"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var epoch = time.Unix(0, 0)

// Entry is one entry of a layer: a directory when Name ends in "/" (Data
// unused), else a regular file holding Data.
type Entry struct {
	Name string
	Mode int64
	Data []byte
}

// Layer is one uncompressed OCI layer holding entries, in their order.
func Layer(entries ...Entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.Name, Mode: e.Mode, Size: int64(len(e.Data)), ModTime: epoch}
		if strings.HasSuffix(e.Name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// Image is an OCI image of layer alone, for linux on this machine's
// architecture, with the run configuration config sets (entrypoint,
// command, user, environment).
func Image(layer v1.Layer, config func(*v1.Config)) (v1.Image, error) {
	return Layered([]v1.Layer{layer}, config)
}

// Layered is Image of several layers, the first at the bottom.
func Layered(layers []v1.Layer, config func(*v1.Config)) (v1.Image, error) {
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layers...)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	config(&cf.Config)
	return mutate.ConfigFile(img, cf)
}
