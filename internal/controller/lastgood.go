package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"

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
	return m, nil
}

// save writes m if it differs from old.
func (s lastGoodStore) save(old, m map[string]settings.Settings) error {
	if s.path == "" || sameMap(old, m) || maps.Equal(old, m) {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".last-good-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Close()
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path)
}

// sameMap reports whether a and b are the same map object (the desired
// package hands back the previous Good map when nothing changed).
func sameMap[K comparable, V any](a, b map[K]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
