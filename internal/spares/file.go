package spares

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"

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
// whole for one new Service). An unchanged spare's JSON is copied from
// the last output, which the memo keeps (the very bytes the caller
// writes, not a copy) with where each spare's JSON ends in it: no slice
// per spare (at 20,000 spares those were ~2.4 MB of issue 29's peak).
// It keeps the State's spares themselves, not a copy (48 B a spare, ~0.5
// MB at 10,000: issue 29's peak): a pool's spares are never changed in
// place once made (Occupy, Grow and their memos copy before they change
// one), and the caller must not change them after Encode either. The
// zero value is ready; not safe for concurrent use. The caller must not
// change the bytes Encode returns.
type EncodeMemo struct {
	spares []Spare // the last pass's (its State's own: not a copy)
	last   []byte  // the last output
	first  int     // where the first spare's JSON starts in last
	ends   []int32 // per spare of spares: where its JSON ends in last
	// classes is the last output's classes as JSON.
	classes []byte
	// encoded counts the spares encoded (tests).
	encoded int
}

// Encode is s as Encode writes it.
func (m *EncodeMemo) Encode(s State) ([]byte, error) {
	if s.Spares == nil {
		var b bytes.Buffer
		err := Encode(&b, s)
		m.spares, m.last, m.ends, m.classes = nil, nil, m.ends[:0], nil
		return b.Bytes(), err
	}
	classes, err := json.Marshal(s.Classes)
	if err != nil {
		return nil, err
	}
	if m.last != nil && bytes.Equal(classes, m.classes) && slices.Equal(s.Spares, m.spares) {
		// The pool of the last pass (an endpoint or node pass changes
		// no spare): its bytes, not a copy of them (~0.7 MB a pass at
		// 10,000 spares in tproxy mode's churn, issue 29).
		return m.last, nil
	}
	out := make([]byte, 0, len(classes)+m.size(s.Spares))
	out = append(out, `{"classes":`...)
	out = append(out, classes...)
	out = append(out, `,"spares":[`...)
	first := len(out)
	ends := make([]int32, len(s.Spares))
	for i, sp := range s.Spares {
		if i > 0 {
			out = append(out, ',')
		}
		if i < len(m.spares) && m.spares[i] == sp {
			from := m.first
			if i > 0 {
				from = int(m.ends[i-1]) + 1 // after the comma
			}
			out = append(out, m.last[from:m.ends[i]]...)
		} else {
			line, err := json.Marshal(sp)
			if err != nil {
				return nil, err
			}
			m.encoded++
			out = append(out, line...)
		}
		ends[i] = int32(len(out))
	}
	out = append(out, "]}\n"...)
	m.spares, m.last, m.first, m.ends, m.classes = s.Spares, out, first, ends, classes
	return out, nil
}

// size is about the room the spares take in the output: an unchanged
// spare's last JSON, another's jsonLen.
func (m *EncodeMemo) size(spares []Spare) int {
	n := 32
	for i, sp := range spares {
		if i < len(m.spares) && m.spares[i] == sp {
			from := m.first
			if i > 0 {
				from = int(m.ends[i-1]) + 1
			}
			n += int(m.ends[i]) - from + 1
		} else {
			n += jsonLen(sp) + 1
		}
	}
	return n
}

// jsonLen is the length of sp's JSON when its strings need no escape.
func jsonLen(sp Spare) int {
	n := len(`{"name":"","class":}`) + len(sp.Name) + len(strconv.Itoa(sp.Class))
	if sp.Occupant != "" {
		n += len(`,"occupant":""`) + len(sp.Occupant)
	}
	if sp.Slots != 0 {
		n += len(`,"slots":`) + len(strconv.Itoa(sp.Slots))
	}
	return n
}
