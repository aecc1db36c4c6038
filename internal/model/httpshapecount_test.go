package model

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// randomHost is a host of one to three rules, each with its own action
// appended to t's, of random header matches, header names set and
// access.
func randomHost(r *rand.Rand, t *HTTP, name string) HTTPHost {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	h := HTTPHost{Name: name}
	for range 1 + r.IntN(3) {
		rule := HTTPRule{PathType: PathPrefix, Path: "/", Action: len(t.Actions), Method: pick("", "", "GET")}
		for range r.IntN(3) {
			rule.Headers = append(rule.Headers, HeaderMatch{Name: pick("x-a", "x-b", "version"), Value: "1"})
		}
		h.Rules = append(h.Rules, rule)
		var a HTTPAction
		if n := pick("", "", "x-set", "x-c"); n != "" {
			a.Set = []HeaderValue{{Name: n, Value: "v"}}
		}
		if r.IntN(3) == 0 {
			a.Remove = []string{pick("x-gone", "x-set")}
		}
		if r.IntN(4) == 0 {
			a.Ext = &HTTPActionExt{Response: HeaderMods{Add: []HeaderValue{{Name: pick("x-r", "x-s"), Value: "1"}}}}
			if r.IntN(2) == 0 {
				a.Ext.BackendMods = []HeaderMods{{Set: []HeaderValue{{Name: pick("x-be", "x-bf"), Value: "1"}}}}
			}
		}
		if r.IntN(5) == 0 {
			a.Access = &HTTPAccess{}
		}
		t.Actions = append(t.Actions, a)
	}
	return h
}

// TestShapeCounter: hosts added and taken at random, a ShapeCounter
// told of each (Host, 1 and -1) holds ShapeOf of the table after every
// step, in its very form (nil and empty alike as ShapeOf gives them),
// and hands back the same Shape while no set or name came or went.
func TestShapeCounter(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 30))
			tab := &HTTP{}
			var c ShapeCounter
			kept := 0
			for step := range 400 {
				last := c.Shape()
				if len(tab.Hosts) == 0 || r.IntN(2) == 0 {
					h := randomHost(r, tab, fmt.Sprint("h", step))
					tab.Hosts = append(tab.Hosts, h)
					c.Host(tab, &tab.Hosts[len(tab.Hosts)-1], 1)
				} else {
					i := r.IntN(len(tab.Hosts))
					c.Host(tab, &tab.Hosts[i], -1)
					tab.Hosts = slices.Delete(tab.Hosts, i, i+1) // its actions stay, pointed at by nothing
				}
				live := &HTTP{Hosts: tab.Hosts}
				for _, h := range tab.Hosts { // the actions the hosts point at, alone
					for _, rule := range h.Rules {
						live.Actions = append(live.Actions, tab.Actions[rule.Action])
					}
				}
				got, want := c.Shape(), ShapeOf(live)
				if !reflect.DeepEqual(*got, want) {
					t.Fatalf("step %d: counted %+v, ShapeOf %+v", step, *got, want)
				}
				if got == last {
					kept++
				}
			}
			if kept == 0 {
				t.Error("the counter never handed back its last Shape")
			}
		})
	}
}

// TestShapeUnion: the union of two tables' shapes is ShapeOf of a table
// holding both's rules and actions, in its very form.
func TestShapeUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 30))
	for i := range 200 {
		a, b := &HTTP{}, &HTTP{}
		for j := range r.IntN(4) {
			a.Hosts = append(a.Hosts, randomHost(r, a, fmt.Sprint("a", j)))
		}
		for j := range r.IntN(4) {
			b.Hosts = append(b.Hosts, randomHost(r, b, fmt.Sprint("b", j)))
		}
		both := &HTTP{Hosts: slices.Concat(a.Hosts, b.Hosts), Actions: slices.Concat(a.Actions, b.Actions)}
		if got, want := ShapeOf(a).Union(ShapeOf(b)), ShapeOf(both); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: union %+v, ShapeOf %+v", i, got, want)
		}
	}
}
