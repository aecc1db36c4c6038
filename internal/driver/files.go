package driver

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
)

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, checked by validate (when not nil) and only then
// renamed over path. A rejected file never replaces path.
func writeAtomic(path string, data []byte, validate func(tmp string) error) error {
	return writeAtomicFunc(path, func(f *os.File) error { _, err := f.Write(data); return err }, validate)
}

// writeAtomicFunc is writeAtomic with write filling the temporary file, so
// that large contents (a server-state dump) can stream into it.
func writeAtomicFunc(path string, write func(*os.File) error, validate func(tmp string) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
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
		return fmt.Errorf("write %s: %w", path, err)
	}
	if validate != nil {
		if err := validate(tmp.Name()); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
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
