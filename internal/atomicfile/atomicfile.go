// Package atomicfile replaces files whole: readers (HAProxy, the kubelet,
// a restarted controller) see the old file or the new one, never a part.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data, with mode perm.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteFunc(path, perm, func(f *os.File) error { _, err := f.Write(data); return err })
}

// WriteFunc is Write with write filling the file, so that large contents
// (a server-state dump, a config) can stream into it.
func WriteFunc(path string, perm os.FileMode, write func(*os.File) error) error {
	tmp, err := Temp(path, perm, write)
	if err != nil {
		return err
	}
	return Commit(tmp, path)
}

// WriteUnsynced is Write without the fsync of the new contents: as
// atomic for readers and for a process that dies (the rename replaces
// the file whole, in the page cache), not durable by itself across a
// machine crash, after which the file may be the old one (or, on a
// file system that does not flush a replaced file's data before the
// rename, empty). For files a writer rewrites whole from its own state
// after it starts (the driver's map files and pool.json), where an fsync
// on every change costs milliseconds on the path of the change.
func WriteUnsynced(path string, data []byte, perm os.FileMode) error {
	tmp, err := temp(path, perm, false, func(f *os.File) error { _, err := f.Write(data); return err })
	if err != nil {
		return err
	}
	return Commit(tmp, path)
}

// Temp writes, through write, a synced temporary file beside path with
// mode perm and returns its name; the caller renames it over path
// (Commit) or removes it.
func Temp(path string, perm os.FileMode, write func(*os.File) error) (string, error) {
	return temp(path, perm, true, write)
}

func temp(path string, perm os.FileMode, sync bool, write func(*os.File) error) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err = write(tmp); err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return tmp.Name(), nil
}

// Commit renames tmp (from Temp) over path; on failure tmp is removed.
func Commit(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
