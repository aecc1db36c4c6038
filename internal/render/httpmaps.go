package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// HTTPMapEntry is one line of an HTTP frontend's map: Key, a space, Value.
type HTTPMapEntry struct{ Key, Value string }

// maxRank bounds the rules of one host (a rank has six digits).
const maxRank = 999999

// HTTPMaps lowers an HTTP table into the contents of its maps, by kind
// (http.go says how the rules read them); every kind is present. A rule,
// host or action whose text is not valid (model.ValidHTTPPath,
// ValidHeaderName, ValidHeaderValue, ValidSNI) is left out: nothing in a
// map comes from text that did not pass them. The ids that tie the maps
// together (a host's "h...", a group's "p...", an action's "a...") are
// named by what they lead to (httpids.go), so a table changed in one
// route changes only that route's entries. HTTPMapsMemo gives the same
// maps, lowering only the actions and hosts it has not seen.
func HTTPMaps(h *model.HTTP) map[string][]HTTPMapEntry {
	out := emptyHTTPMaps()
	if h == nil {
		return out
	}
	sets, _ := headerSetIDs(h)
	p := &placer{ids: contentIDs{}, out: out}
	aids := make([]string, len(h.Actions))
	for ai, a := range h.Actions {
		aids[ai] = lowerAction(p, a)
	}
	for _, host := range h.Hosts {
		lowerHost(p, host, sets, aids)
	}
	listenerEntries(out, h.Listeners) // httpext.go
	passEntries(out, h.Passthrough)   // passthrough.go
	return out
}

// emptyHTTPMaps has every kind, empty.
func emptyHTTPMaps() map[string][]HTTPMapEntry {
	out := make(map[string][]HTTPMapEntry, len(HTTPMapKinds))
	for _, k := range HTTPMapKinds {
		out[k] = []HTTPMapEntry{}
	}
	return out
}

// headerSetIDs names each of h's header sets (model.HTTP.HeaderSets) by
// its place: "m0" (no header), "m1"...; key is them all in one string.
func headerSetIDs(h *model.HTTP) (sets map[string]string, key string) {
	sets = map[string]string{}
	var b strings.Builder
	for i, s := range h.HeaderSets() {
		names := strings.Join(s, ",")
		sets[names] = "m" + strconv.Itoa(i)
		b.WriteString(strconv.Itoa(len(names)) + ":" + names)
	}
	return sets, b.String()
}

// lowerAction places action a's entries and returns its id.
func lowerAction(p *placer, a model.HTTPAction) string {
	rel := map[string][]HTTPMapEntry{}
	accessEntries(p, rel, a.Access) // httpaccess.go
	actionEntries(rel, idHole, a)
	return p.place("a", rel)
}

// lowerHost places host's entries: its groups' match entries, then its
// exact and prefix paths under the host's id, then the host; nothing
// for a host whose name is not valid. aids are the actions' ids.
func lowerHost(p *placer, host model.HTTPHost, sets map[string]string, aids []string) {
	key, name, ok := listenerHost(host.Name) // httplistener.go: "KEY|" in the fixed HTTP listener's table
	if !ok || !model.ValidHTTPHost(name) {
		return
	}
	paths := map[string][]HTTPMapEntry{} // the host's exact and prefix entries, under idHole
	rules := validRules(host.Rules, len(aids))
	group := func(kind, key string, takes func(r model.HTTPRule) bool) {
		matches := map[string][]HTTPMapEntry{} // the group's match entries, under idHole
		seen := map[string]bool{}
		for rank, r := range rules {
			if rank > maxRank || !takes(r.HTTPRule) {
				continue
			}
			k := idHole + "|" + sets[strings.Join(r.names, ",")] + "|" + strings.Join(r.values, "|")
			if !seen[k] {
				seen[k] = true
				matches[HTTPMatch] = append(matches[HTTPMatch], HTTPMapEntry{k, fmt.Sprintf("%06d:%s", rank, aids[r.Action])})
			}
		}
		paths[kind] = append(paths[kind], HTTPMapEntry{idHole + key, p.place("p", matches)})
	}
	var exact, prefixes []string
	for _, r := range rules {
		if r.PathType == model.PathExact && !slices.Contains(exact, r.Path) {
			exact = append(exact, r.Path)
		}
		if pre := prefixOf(r.HTTPRule); r.PathType == model.PathPrefix && !slices.Contains(prefixes, pre) {
			prefixes = append(prefixes, pre)
		}
	}
	for _, e := range exact {
		group(HTTPExact, e, func(r model.HTTPRule) bool {
			return (r.PathType == model.PathExact && r.Path == e) || (r.PathType == model.PathPrefix && prefixTakes(prefixOf(r), e))
		})
	}
	// Longest first: the file reads as the lookup works.
	slices.SortStableFunc(prefixes, func(a, b string) int { return len(b) - len(a) })
	for _, pre := range prefixes {
		key := pre + "/"
		if pre == "/" {
			key = "/"
		}
		group(HTTPPrefix, key, func(r model.HTTPRule) bool {
			return r.PathType == model.PathPrefix && prefixTakes(prefixOf(r), pre)
		})
	}
	if rest, ok := strings.CutPrefix(name, model.OneLabelPrefix); ok {
		p.add(HTTPOneLabel, HTTPMapEntry{key + rest, p.place("h", paths)})
		return
	}
	p.add(HTTPHosts, HTTPMapEntry{key + name, p.place("h", paths)})
}

// rule is a valid rule with its header names (sorted, first of each
// name) and their values in that order.
type rule struct {
	model.HTTPRule
	names, values []string
}

func validRules(rules []model.HTTPRule, actions int) []rule {
	out := make([]rule, 0, len(rules))
	for _, r := range rules {
		if (r.PathType != model.PathExact && r.PathType != model.PathPrefix) || !model.ValidHTTPPath(r.Path) || r.Action < 0 || r.Action >= actions {
			continue
		}
		ok := r.Method == "" || model.ValidMethod(r.Method)
		hs := slices.Clone(r.Headers)
		for _, q := range r.Query {
			ok = ok && model.ValidQueryName(q.Name)
			hs = append(hs, model.HeaderMatch{Name: model.QueryMatch + q.Name, Value: q.Value})
		}
		if r.Method != "" {
			hs = append(hs, model.HeaderMatch{Name: model.MethodMatch, Value: r.Method})
		}
		slices.SortStableFunc(hs, func(a, b model.HeaderMatch) int { return strings.Compare(a.Name, b.Name) })
		hs = slices.CompactFunc(hs, func(a, b model.HeaderMatch) bool { return a.Name == b.Name })
		x := rule{HTTPRule: r}
		for _, m := range hs {
			ok = ok && validMatchName(m.Name) && model.ValidHeaderValue(m.Value) // httpext.go
			x.names, x.values = append(x.names, m.Name), append(x.values, m.Value)
		}
		if ok {
			out = append(out, x)
		}
	}
	return out
}

// prefixOf is a PathPrefix rule's path without its trailing slashes ("/"
// for the root).
func prefixOf(r model.HTTPRule) string {
	if p := strings.TrimRight(r.Path, "/"); p != "" {
		return p
	}
	return "/"
}

// prefixTakes reports whether prefix p (prefixOf) takes path: element-wise.
func prefixTakes(p, path string) bool {
	return p == "/" || path == p || strings.HasPrefix(path, p+"/")
}

// actionEntries adds action a's entries (id aid) to the maps.
func actionEntries(out map[string][]HTTPMapEntry, aid string, a model.HTTPAction) {
	if rd := a.Redirect; rd != nil {
		if slices.Contains(model.RedirectCodes, rd.Code) && (rd.Scheme == "http" || rd.Scheme == "https") &&
			(rd.Host == "" || (model.ValidSNI(rd.Host) && !strings.HasPrefix(rd.Host, "*"))) {
			port := ""
			if rd.Port != 0 {
				port = ":" + strconv.Itoa(int(rd.Port))
			}
			v := strconv.Itoa(rd.Code) + "|" + rd.Scheme + "|" + rd.Host + "|" + port
			if rd.StripSlash {
				v += "|" + redirectStrip
			}
			out[HTTPRedirect] = append(out[HTTPRedirect], HTTPMapEntry{aid, v})
		}
		extEntries(out, aid, a) // httpext.go: the redirect's path
		return
	}
	extEntries(out, aid, a)
	headerEntries(out, aid, "", model.HeaderMods{Set: a.Set, Add: a.Add, Remove: a.Remove}) // httpext.go
	tagged := slices.Clone(a.Backends)
	for i := range tagged {
		tagged[i].Name += backendTag(out, aid, a, i) // httpext.go
	}
	weightRanges(tagged, httpPick, func(lo, hi int64, name string) {
		for _, p := range decimalPrefixes(httpPick+lo, httpPick+hi) {
			out[HTTPBackends] = append(out[HTTPBackends], HTTPMapEntry{aid + ":" + p, name})
		}
	})
}

// decimalPrefixes are the fewest decimal prefixes that together take
// exactly the numbers lo..hi (of as many digits as hi), e.g. 10000..14999:
// 10, 11, 12, 13, 14. None when hi < lo.
func decimalPrefixes(lo, hi int64) []string {
	var out []string
	width := len(strconv.FormatInt(hi, 10))
	for lo <= hi {
		size, digits := int64(1), 0
		for digits < width-1 && lo%(size*10) == 0 && lo+size*10-1 <= hi {
			size *= 10
			digits++
		}
		s := strconv.FormatInt(lo, 10)
		out = append(out, s[:len(s)-digits])
		lo += size
	}
	return out
}

// HTTPMapContent is what a map file holds for these entries.
// Its bytes are allocated once, at their size: a pass writes the files
// of the kinds a change touched whole, thousands of entries each.
func HTTPMapContent(entries []HTTPMapEntry) []byte {
	n := 0
	for _, e := range entries {
		n += len(e.Key) + len(e.Value) + 2
	}
	if n == 0 {
		return nil
	}
	b := make([]byte, 0, n)
	for _, e := range entries {
		b = append(append(append(append(b, e.Key...), ' '), e.Value...), '\n')
	}
	return b
}
