package render

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// The ids of an HTTP table's maps are named by their content: an action's
// id by its entries (backends by weight, header changes, redirect), a
// group's by its rules (ranks and action ids), a host's by its paths
// (keys and group ids). So each id stands for one content for as long as
// it exists: a route changed among thousands gives new ids to what it
// changed and to the host over it, and only those entries change in the
// maps (the driver sends the difference, runtimeapi/mapdiff.go); a
// request that holds an id reads the entries that id always had; and
// hosts, groups or actions with the same content share one id and one
// set of entries.

// idHole stands for the id in the entries given to place, keys and
// values alike (an entry may name its own id: a backend's value naming
// its action's header changes); no map text holds it (model's
// validators refuse control characters).
const idHole = "\x00"

// idLen is how many hex digits of the content's SHA-256 an id has (48
// bits; a collision is told apart, place).
const idLen = 12

// contentIDs are the ids given so far in one table, with the digest of
// the content each stands for.
type contentIDs map[string][sha256.Size]byte

// placement is one id given with its entries (the id in place), kinds
// sorted: what place adds to a table the first time it gives the id;
// or, id empty, an entry named by no id (add).
type placement struct {
	id     string
	sum    [sha256.Size]byte
	groups []kindEntries
	slot   *idSlot // the memo's (httpslots.go); nil in HTTPMaps
}

// kindEntries are the entries of one kind (ki: the kind's place in
// HTTPMapKinds, kindIndex).
type kindEntries struct {
	kind    string
	entries []HTTPMapEntry
	ki      int
}

// kindIndex is kind's place in HTTPMapKinds (-1: none).
func kindIndex(kind string) int { return slices.Index(HTTPMapKinds, kind) }

// kindLists are a table's entries by kind, at the kind's place in
// HTTPMapKinds: the memo adds a placement's entries without a map lookup
// per group (addLowered).
type kindLists [][]HTTPMapEntry

// asMaps is l by kind.
func (l kindLists) asMaps() map[string][]HTTPMapEntry {
	out := make(map[string][]HTTPMapEntry, len(HTTPMapKinds))
	for i, k := range HTTPMapKinds {
		out[k] = l[i]
	}
	return out
}

// placer gives ids to contents: straight into the table's maps (out
// set), or recorded for the memo (httpmemo.go) to add later, in order.
type placer struct {
	ids    contentIDs
	out    map[string][]HTTPMapEntry // nil: record
	places []placement
}

// place returns the id (tag and digits) of rel, entries by kind with
// idHole where the id goes, and adds them with the id in place the
// first time it is given. Two contents whose digits agree get distinct
// ids (the later one's digits are of its content and a count).
func (p *placer) place(tag string, rel map[string][]HTTPMapEntry) string {
	kinds := make([]string, 0, len(rel))
	for k := range rel {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	h := sha256.New()
	for _, k := range kinds {
		for _, e := range rel[k] {
			h.Write([]byte(k + "\x00" + e.Key + "\x00" + e.Value + "\n"))
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	id := tag + hex.EncodeToString(sum[:idLen/2])
	for n := 1; ; n++ {
		had, ok := p.ids[id]
		if ok && had == sum {
			return id // the same content: its entries are placed
		}
		if !ok {
			break
		}
		alt := sha256.Sum256(append(sum[:], strconv.Itoa(n)...))
		id = tag + hex.EncodeToString(alt[:idLen/2])
	}
	p.ids[id] = sum
	pl := placement{id: id, sum: sum, groups: make([]kindEntries, len(kinds))}
	for g, k := range kinds {
		es := make([]HTTPMapEntry, len(rel[k]))
		for i, e := range rel[k] {
			es[i] = HTTPMapEntry{strings.ReplaceAll(e.Key, idHole, id), strings.ReplaceAll(e.Value, idHole, id)}
		}
		pl.groups[g] = kindEntries{k, es, kindIndex(k)}
	}
	if p.out != nil {
		addPlacement(p.out, pl)
	} else {
		p.places = append(p.places, pl)
	}
	return id
}

// add adds an entry named by no id of its own (a host's).
func (p *placer) add(kind string, e HTTPMapEntry) {
	pl := placement{groups: []kindEntries{{kind, []HTTPMapEntry{e}, kindIndex(kind)}}}
	if p.out != nil {
		addPlacement(p.out, pl)
	} else {
		p.places = append(p.places, pl)
	}
}

// addPlacement adds pl's entries to out.
func addPlacement(out map[string][]HTTPMapEntry, pl placement) {
	for _, g := range pl.groups {
		out[g.kind] = append(out[g.kind], g.entries...)
	}
}
