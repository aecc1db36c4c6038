package model

import (
	"maps"
	"slices"
)

// ShapeCounter keeps an HTTP table's Shape from the rules and actions a
// producer adds to and takes from it (issue 30): each header set and
// each header name counted by the rules and actions that give it, the
// actions with access counted, so a change costs what changed, not a
// walk of the table. Shape is ShapeOf of a table holding exactly what
// was added and not taken, in ShapeOf's form; it is made again only when
// a set or name came or went, else the last one (never changed: tables
// share it). The zero ShapeCounter counts nothing.
type ShapeCounter struct {
	sets   map[string]*countedSet // by the names joined with 0 bytes
	names  [3]map[string]int      // Modified, Response, Backend
	access int
	shape  *HTTPShape // nil: made again when asked
	buf    []string
	key    []byte
}

// countedSet is one header set and the rules matching on it.
type countedSet struct {
	names []string
	n     int
}

// Rule counts r's header set d times (d 1 or -1).
func (c *ShapeCounter) Rule(r *HTTPRule, d int) {
	c.buf = r.appendMatchNames(c.buf[:0])
	if len(c.buf) == 0 {
		return // the empty set: always there
	}
	c.key = c.key[:0]
	for _, n := range c.buf {
		c.key = append(append(c.key, n...), 0)
	}
	if c.sets == nil {
		c.sets = map[string]*countedSet{}
	}
	s := c.sets[string(c.key)]
	if s == nil {
		s = &countedSet{names: slices.Clone(c.buf)}
		c.sets[string(c.key)] = s
		c.shape = nil
	}
	if s.n += d; s.n <= 0 {
		delete(c.sets, string(c.key))
		c.shape = nil
	}
}

// Action counts a's header names and access d times (d 1 or -1).
func (c *ShapeCounter) Action(a *HTTPAction, d int) {
	c.mods(0, HeaderMods{Set: a.Set, Add: a.Add, Remove: a.Remove}, d)
	if a.Ext != nil {
		c.mods(1, a.Ext.Response, d)
		for _, m := range a.Ext.BackendMods {
			c.mods(2, m, d)
		}
	}
	if a.Access != nil {
		if c.access += d; (c.access > 0) != (c.access-d > 0) {
			c.shape = nil
		}
	}
}

// Host counts host's rules and the actions of t they point at, d times.
func (c *ShapeCounter) Host(t *HTTP, host *HTTPHost, d int) {
	for i := range host.Rules {
		c.Rule(&host.Rules[i], d)
		c.Action(&t.Actions[host.Rules[i].Action], d)
	}
}

// mods counts m's names (HeaderMods.Names, each as often as m has it:
// taken out as it was put in) d times into list i.
func (c *ShapeCounter) mods(i int, m HeaderMods, d int) {
	for _, v := range m.Set {
		c.count(i, v.Name, d)
	}
	for _, v := range m.Add {
		c.count(i, v.Name, d)
	}
	for _, n := range m.Remove {
		c.count(i, n, d)
	}
}

// count counts name n d times into list i; the shape is made again when
// n comes or goes.
func (c *ShapeCounter) count(i int, n string, d int) {
	if c.names[i] == nil {
		c.names[i] = map[string]int{}
	}
	v := c.names[i][n] + d
	switch {
	case v <= 0:
		delete(c.names[i], n)
		c.shape = nil
	case v == d:
		c.shape = nil // new
	}
	if v > 0 {
		c.names[i][n] = v
	}
}

// Shape is the counted table's shape.
func (c *ShapeCounter) Shape() *HTTPShape {
	if c.shape != nil {
		return c.shape
	}
	s := &HTTPShape{HeaderSets: make([][]string, 1, len(c.sets)+1), Access: c.access > 0}
	s.HeaderSets[0] = []string{}
	for _, set := range c.sets {
		s.HeaderSets = append(s.HeaderSets, set.names)
	}
	SortHeaderSets(s.HeaderSets[1:])
	for i, p := range []*[]string{&s.Modified, &s.Response, &s.Backend} {
		if len(c.names[i]) > 0 {
			*p = slices.Sorted(maps.Keys(c.names[i]))
		}
	}
	c.shape = s
	return s
}
