package controller

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
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

func (s lastGoodStore) load() (map[string]settings.Settings, error) {
	m := make(map[string]settings.Settings)
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
		return make(map[string]settings.Settings), fmt.Errorf("%s: %w", s.path, err)
	}
	// What the grammar refuses never reaches HAProxy, from a file either.
	var bad []error
	for k, v := range m {
		if err := settings.Validate(v); err != nil {
			delete(m, k)
			bad = append(bad, fmt.Errorf("%s: %w", k, err))
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
func (s lastGoodStore) save(old, m map[string]settings.Settings) error {
	if sameMap(old, m) || maps.Equal(old, m) {
		return nil
	}
	return s.write(m)
}

// write writes m whole.
func (s lastGoodStore) write(m map[string]settings.Settings) error {
	if s.path == "" {
		return nil
	}
	return atomicfile.WriteFunc(s.path, 0o600, func(f *os.File) error {
		w := bufio.NewWriterSize(f, 32<<10)
		if err := writeJSONMap(w, m); err != nil {
			return err
		}
		return w.Flush()
	})
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
