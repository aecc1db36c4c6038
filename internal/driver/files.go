package driver

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, checked by validate (when not nil) and only then
// renamed over path. A rejected file never replaces path.
func writeAtomic(path string, data []byte, validate func(tmp string) error) error {
	return writeAtomicFunc(path, func(f *os.File) error { _, err := f.Write(data); return err }, validate)
}

// writeAtomicFunc is writeAtomic with write filling the temporary file, so
// that large contents (a server-state dump, a config) can stream into it.
func writeAtomicFunc(path string, write func(*os.File) error, validate func(tmp string) error) error {
	tmp, err := writeTemp(path, write)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // no-op after a successful rename
	if validate != nil {
		if err := validate(tmp); err != nil {
			return err
		}
	}
	return commitTemp(tmp, path)
}

// writeTemp writes, through write, a synced temporary file beside path and
// returns its name; the caller renames it over path (commitTemp) or
// removes it.
func writeTemp(path string, write func(*os.File) error) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err = write(tmp); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return tmp.Name(), nil
}

func commitTemp(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeConfig renders cfg with layout into a temporary file beside the
// config and returns its name and the digest of its bytes.
func (d *HAProxy) writeConfig(cfg model.Config, layout model.Layout, opts render.Options, hash string) (tmp string, digest [sha256.Size]byte, err error) {
	tmp, err = writeTemp(d.opts.ConfigPath, func(f *os.File) error {
		var werr error
		digest, werr = render.WriteConfig(f, cfg, layout, opts, hash)
		return werr
	})
	if err == nil {
		if err = protectConfig(tmp, opts); err != nil {
			_ = os.Remove(tmp)
		}
	}
	return tmp, digest, err
}

// keepPrevious keeps the config file in force under another name (a hard
// link: no copy of megabytes) while a new one replaces it; restore(true)
// puts it back, restore(false) drops the copy. Without hard links it
// falls back to keeping the bytes in memory.
func (d *HAProxy) keepPrevious() (restore func(putBack bool)) {
	path := d.opts.ConfigPath
	prev := path + ".prev"
	_ = os.Remove(prev)
	if err := os.Link(path, prev); err == nil {
		return func(putBack bool) {
			if !putBack {
				_ = os.Remove(prev)
				return
			}
			if err := os.Rename(prev, path); err != nil {
				d.log.Error("could not restore previous config", "err", err)
			}
			d.written = [sha256.Size]byte{} // unknown: the next flush rewrites it
		}
	}
	old, err := os.ReadFile(path)
	return func(putBack bool) {
		if !putBack || err != nil {
			return
		}
		if werr := writeAtomic(path, old, nil); werr != nil {
			d.log.Error("could not restore previous config", "err", werr)
		}
		d.written = sha256.Sum256(old)
	}
}
