package runtimeapi

import (
	"crypto/sha256"
	"os"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// writeConfig renders cfg with layout into a temporary file beside the
// config and returns its name and the digest of its bytes.
func (d *HAProxy) writeConfig(cfg model.Config, layout model.Layout, opts render.Options, hash string) (tmp string, digest [sha256.Size]byte, err error) {
	tmp, err = atomicfile.Temp(d.opts.ConfigPath, 0o644, func(f *os.File) error {
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
		if werr := atomicfile.Write(path, old, 0o644); werr != nil {
			d.log.Error("could not restore previous config", "err", werr)
		}
		d.written = sha256.Sum256(old)
	}
}
