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

// sameHost is what the last table lowered for host at place i, or nil:
// the same name and rules, and every rule's action of the same id as
// then (aids: this table's; the header sets are the caller's check).
func (m *HTTPMapsMemo) sameHost(i int, host *model.HTTPHost, aids []string) (*lowered, hostIdent) {
	id := identOfHost(host)
	if i >= len(m.seenH) || m.seenH[i].ident != id {
		return nil, id
	}
	for _, r := range host.Rules {
		if aidOf(aids, r.Action) != aidOf(m.aids, r.Action) {
			return nil, id
		}
	}
	m.Same++
	return m.seenH[i].l, id
}
