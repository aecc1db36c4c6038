package spares

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The pool as a driver keeps it on disk (JSON), so that a restarted
// controller puts every backend back into the spare it had and renders
// the same spares: the same structure hash as the HAProxy that runs, no
// reload. The file is the controller's own, but read as untrusted: Decode
// checks its shape, and Restore keeps only the classes that the current
// model has, so that every setting rendered comes from the model, never
// from the file.

// maxFile bounds what Decode reads: a pool of 100,000 spares is ~5 MB.
const maxFile = 16 << 20

// Encode writes s to w.
func Encode(w io.Writer, s State) error {
	return json.NewEncoder(w).Encode(s)
}

// Decode reads a pool Encode wrote: spares named and numbered in
// ascending order, each of a class the file has, each occupant once.
func Decode(r io.Reader) (State, error) {
	var s State
	dec := json.NewDecoder(io.LimitReader(r, maxFile))
	if err := dec.Decode(&s); err != nil {
		return State{}, fmt.Errorf("pool file: %w", err)
	}
	last := -1
	seen := make(map[string]bool, len(s.Spares))
	for _, sp := range s.Spares {
		n, ok := SpareIndex(sp.Name)
		switch {
		case !ok || n <= last:
			return State{}, fmt.Errorf("pool file: spare %q out of order or not a spare's name", sp.Name)
		case sp.Class < 0 || sp.Class >= len(s.Classes):
			return State{}, fmt.Errorf("pool file: spare %s of class %d, which the file does not have", sp.Name, sp.Class)
		case sp.Occupant != "" && seen[sp.Occupant]:
			return State{}, fmt.Errorf("pool file: %q occupies two spares", sp.Occupant)
		}
		last, seen[sp.Occupant] = n, true
	}
	return s, nil
}

// Restore keeps of s the classes that some backend of cfg has, each as
// cfg's backend has it, and their twins (the other SourceChecked: kept
// by Policy.SourceTwin, settings from the model all the same), and the
// spares of those classes; an occupant that is not in cfg leaves its
// spare free. What it drops (a class no Service
// has any more) is a reload once, when the pool is rendered without it.
func Restore(s State, cfg model.Config) State {
	var out State
	remap := make([]int, len(s.Classes))
	for i := range remap {
		remap[i] = -1
	}
	names := make(map[string]bool, len(cfg.Backends))
	for _, b := range cfg.Backends {
		if !pooled(b) {
			continue
		}
		names[b.Name] = true
		for _, k := range []model.Backend{classKey(b), twin(classKey(b))} {
			i := slices.IndexFunc(s.Classes, func(c model.Backend) bool { return c.SameStructure(&k) })
			if i >= 0 && remap[i] < 0 {
				out.Classes = append(out.Classes, k)
				remap[i] = len(out.Classes) - 1
			}
		}
	}
	for _, sp := range s.Spares {
		if sp.Class < 0 || sp.Class >= len(remap) || remap[sp.Class] < 0 {
			continue
		}
		sp.Class = remap[sp.Class]
		if !names[sp.Occupant] {
			sp.Occupant = ""
		}
		out.Spares = append(out.Spares, sp)
	}
	return out
}

// FileBeside is where a controller keeps the pool of the haproxy.cfg at
// configPath (the local driver's default): pool.json beside it.
func FileBeside(configPath string) string {
	return filepath.Join(filepath.Dir(configPath), "pool.json")
}

// EncodeMemo encodes a pool pass after pass as Encode does, byte for
// byte, encoding again only the spares that differ from the last pass's
// at the same place (issue 29: pool.json of 10,000 spares was encoded
// whole for one new Service). The zero value is ready; not safe for
// concurrent use.
type EncodeMemo struct {
	spares []Spare
	lines  [][]byte // each spare's JSON
	// encoded counts the spares encoded (tests).
	encoded int
}

// Encode is s as Encode writes it.
func (m *EncodeMemo) Encode(s State) ([]byte, error) {
	if s.Spares == nil {
		var b bytes.Buffer
		err := Encode(&b, s)
		return b.Bytes(), err
	}
	classes, err := json.Marshal(s.Classes)
	if err != nil {
		return nil, err
	}
	lines := make([][]byte, len(s.Spares))
	n := len(classes) + 32
	for i, sp := range s.Spares {
		if i < len(m.spares) && m.spares[i] == sp {
			lines[i] = m.lines[i]
		} else if lines[i], err = json.Marshal(sp); err != nil {
			return nil, err
		} else {
			m.encoded++
		}
		n += len(lines[i]) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, `{"classes":`...)
	out = append(out, classes...)
	out = append(out, `,"spares":[`...)
	for i, l := range lines {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, l...)
	}
	out = append(out, "]}\n"...)
	m.spares, m.lines = append(m.spares[:0], s.Spares...), lines
	return out, nil
}
