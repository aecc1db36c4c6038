package controller

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// lastGoodStore keeps, across controller restarts, the last valid settings
// of each Service, so that a Service whose annotations turned invalid keeps
// its configuration even after a restart. An empty path disables it.
type lastGoodStore struct{ path string }

func (s lastGoodStore) load() (map[string]*settings.Settings, error) {
	m := make(map[string]*settings.Settings)
	if s.path == "" {
		return m, nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return make(map[string]*settings.Settings), fmt.Errorf("%s: %w", s.path, err)
	}
	// What the grammar refuses never reaches HAProxy, from a file either.
	// Equal settings become one object, as the desired package's passes
	// make them (most Services have the same).
	var bad []error
	shared := make(map[settings.Settings]*settings.Settings)
	for k, v := range m {
		if v == nil {
			delete(m, k)
			bad = append(bad, fmt.Errorf("%s: no settings (null)", k))
			continue
		}
		if err := settings.Validate(*v); err != nil {
			delete(m, k)
			bad = append(bad, fmt.Errorf("%s: %w", k, err))
			continue
		}
		if p, ok := shared[*v]; ok {
			m[k] = p
		} else {
			shared[*v] = v
		}
	}
	if len(bad) > 0 {
		return m, fmt.Errorf("%s: entries dropped: %w", s.path, errors.Join(bad...))
	}
	return m, nil
}

// save writes m if it differs from old. Entries are encoded one by one
// into the file: at 10,000 Services the map is megabytes of JSON, and
// json.Marshal of the whole map would hold all of it (twice, while its
// buffer grows) on every pass that changes a Service.
func (s lastGoodStore) save(old, m map[string]*settings.Settings) error {
	if sameMap(old, m) || settings.EqualMaps(old, m) {
		return nil
	}
	return s.write(m)
}

// write writes m whole.
func (s lastGoodStore) write(m map[string]*settings.Settings) error {
	_, err := s.writeUnless(m, nil)
	return err
}

// errSameContents: the file would hold what it holds (writeUnless).
var errSameContents = errors.New("the same contents")

// writeUnless writes m whole unless its encoding's digest is *held (the
// file's, as the last write returned it): then the new file is dropped
// before its sync and rename, and errSameContents returned. It returns
// the digest of what it encoded. Entries are encoded one at a time, the
// digest taken on the way (no copy of the megabytes of JSON kept).
func (s lastGoodStore) writeUnless(m map[string]*settings.Settings, held *[sha256.Size]byte) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if s.path == "" {
		return sum, nil
	}
	err := atomicfile.WriteFunc(s.path, 0o600, func(f *os.File) error {
		h := sha256.New()
		w := bufio.NewWriterSize(io.MultiWriter(f, h), 32<<10)
		if err := writeJSONMap(w, m); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		h.Sum(sum[:0])
		if held != nil && *held == sum {
			return errSameContents
		}
		return nil
	})
	return sum, err
}

// writeJSONMap writes m as one JSON object, keys sorted (as json.Marshal
// would), encoding one entry at a time.
func writeJSONMap[V any](w *bufio.Writer, m map[string]V) error {
	w.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			w.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return err
		}
		vb, err := json.Marshal(m[k])
		if err != nil {
			return err
		}
		w.Write(kb)
		w.WriteByte(':')
		w.Write(vb)
	}
	return w.WriteByte('}')
}

// sameMap reports whether a and b are the same map object (the desired
// package hands back the previous Good map when nothing changed).
func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
