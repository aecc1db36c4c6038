package render

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"

// The memo's fast path (issue 30): a table's actions and hosts are
// values, but what they hold (backends, header changes, rules) are
// slices and pointers that the compilers' memos (gateway's tableMemo,
// ingress's passmemo) share, unchanged, from one pass's table to the
// next; a model's table is never changed once made. So an action or a
// host at the same place as in the memo's last table, holding the same
// slices and pointers, has the same content, and the memo takes what it
// lowered then without building its key (actionKey, hostKey: every
// field) nor looking it up. Anything else (a place that moved, a slice
// copied, as spares.View's renamed backends are) takes the content key
// as before: the identity only saves work, the key stays the truth.

// actionIdent is an action's slices and pointers, by identity.
type actionIdent struct {
	backends       *model.WeightedBackend
	set, add       *model.HeaderValue
	remove         *string
	nb, ns, na, nr int
	redirect       *model.Redirect
	ext            *model.HTTPActionExt
	access         *model.HTTPAccess
}

func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

func identOfAction(a *model.HTTPAction) actionIdent {
	return actionIdent{
		backends: first(a.Backends), set: first(a.Set), add: first(a.Add), remove: first(a.Remove),
		nb: len(a.Backends), ns: len(a.Set), na: len(a.Add), nr: len(a.Remove),
		redirect: a.Redirect, ext: a.Ext, access: a.Access,
	}
}

// hostIdent is a host's name and rules, by identity.
type hostIdent struct {
	name  string
	rules *model.HTTPRule
	n     int
}

func identOfHost(h *model.HTTPHost) hostIdent {
	return hostIdent{name: h.Name, rules: first(h.Rules), n: len(h.Rules)}
}

// seenAction is an action of the memo's last table, at its place.
type seenAction struct {
	ident actionIdent
	l     *lowered
}

// seenHost is a host of the memo's last table, at its place.
type seenHost struct {
	ident hostIdent
	l     *lowered
}

// aidOf is the id of a rule's action as hostKey writes it.
func aidOf(aids []string, i int) string {
	if i >= 0 && i < len(aids) {
		return aids[i]
	}
	return "-"
}

// sameAction is what the last table lowered for action a at place i,
// or nil when a is not known there by identity.
func (m *HTTPMapsMemo) sameAction(i int, a *model.HTTPAction) (*lowered, actionIdent) {
	id := identOfAction(a)
	if i < len(m.seenA) && m.seenA[i].ident == id {
		m.Same++
		return m.seenA[i].l, id
	}
	return nil, id
}

// The hosts' places are aligned, not compared place by place: the
// table's hosts are in order, so a new route's host lands among them
// and moves every host after it one place on (a route gone, one place
// back). Maps walks the last table's hosts with a cursor beside this
// table's: a host is looked for at the cursor and a few places after it
// (hostsAhead: hosts gone before it), and a host not found there takes
// the cursor's place only when the next host does not stand there (a
// host changed in place, not one put in). So a new route among 5,000
// takes 5,000 hosts by identity and moves one place's count
// (httpuses.go), where comparing by place built the key of, and moved
// the count of, every host after it. The alignment only saves work:
// each of the last table's places is still given up once and each of
// this table's taken once, whatever it aligns.

// hostsAhead is how many of the last table's places after the cursor a
// host is looked for at.
const hostsAhead = 4

// sameHostNear is what the last table lowered for host at the first of
// the places from j to j+hostsAhead that held it, with that place, or
// nil (the place -1).
func (m *HTTPMapsMemo) sameHostNear(j int, host *model.HTTPHost, aids []string) (*lowered, hostIdent, int) {
	id := identOfHost(host)
	for k := j; k < len(m.seenH) && k <= j+hostsAhead; k++ {
		if m.seenH[k].ident == id && m.sameActionIDs(host, aids) {
			m.Same++
			return m.seenH[k].l, id, k
		}
	}
	return nil, id, -1
}

// sameActionIDs reports whether every rule of host names an action of
// the same id in this table (aids) as in the last (the header sets are
// the caller's check).
func (m *HTTPMapsMemo) sameActionIDs(host *model.HTTPHost, aids []string) bool {
	for _, r := range host.Rules {
		if aidOf(aids, r.Action) != aidOf(m.aids, r.Action) {
			return false
		}
	}
	return true
}

// replaces reports whether a host not found near the cursor j takes the
// last table's place j (changed in place), rather than being put in
// before it (next, this table's hosts after it, starts with the host
// that had place j).
func (m *HTTPMapsMemo) replaces(j int, next []model.HTTPHost, aids []string) bool {
	if j >= len(m.seenH) {
		return false
	}
	return len(next) == 0 || m.seenH[j].ident != identOfHost(&next[0]) || !m.sameActionIDs(&next[0], aids)
}
