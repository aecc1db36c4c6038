package scratch

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DirLayer is one uncompressed OCI layer holding the tree under dir (dir
// itself is the layer's root): directories, regular files and symbolic
// links, in lexical order, owned by root and dated the Unix epoch, with
// their permission bits. A file hard-linked more than once is stored as
// a regular file each time. Device nodes, sockets and pipes are left out
// (the container runtime makes /dev). The tree is read again each time
// the layer is read, so it must not change while the image is written.
func DirLayer(dir string) (v1.Layer, error) {
	// Fail now, not while the tarball is being written.
	if _, err := dirEntries(dir); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeDir(pw, dir)) }()
		return pr, nil
	}, tarball.WithMediaType(types.OCILayer))
}

// dirEntries lists the layer's paths under dir, relative to it, in the
// order filepath.WalkDir visits them (lexical).
func dirEntries(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer from %s: %w", dir, err)
	}
	return names, nil
}

// writeDir writes the tar stream of the tree under dir to w.
func writeDir(w io.Writer, dir string) error {
	names, err := dirEntries(dir)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, name := range names {
		if err := writeEntry(tw, dir, name); err != nil {
			return fmt.Errorf("layer from %s: %s: %w", dir, name, err)
		}
	}
	return tw.Close()
}

// writeEntry writes the entry dir/name to tw, or nothing for a special
// file.
func writeEntry(tw *tar.Writer, dir, name string) error {
	p := filepath.Join(dir, filepath.FromSlash(name))
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: epoch, Format: tar.FormatPAX}
	if fi.Mode()&fs.ModeSticky != 0 {
		h.Mode |= 0o1000
	}
	if fi.Mode()&fs.ModeSetuid != 0 {
		h.Mode |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		h.Mode |= 0o2000
	}
	switch {
	case fi.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
	case fi.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	default:
		return nil // device, socket, pipe
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(tw, f, h.Size); err != nil {
		return err
	}
	return nil
}
