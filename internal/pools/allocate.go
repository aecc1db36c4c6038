package pools

import (
	"cmp"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Port is one port a Service listens on, for the allow-shared-ip check.
type Port struct {
	Protocol string
	Port     int32
}

// Request is what one Service asks for. Requests are served in the order
// given (the caller's: oldest Service first), after every Service kept its
// current addresses.
type Request struct {
	Key             string // "namespace/name"
	Namespace       string
	NamespaceLabels map[string]string
	Labels          map[string]string
	// Families it wants an address of (4, 6), from spec.ipFamilies; none
	// means IPv4.
	Families []int
	IPs      []netip.Addr // asked for (annotation, spec.loadBalancerIP)
	Pool     string       // asked for (annotation)
	ShareKey string       // allow-shared-ip
	Ports    []Port
	// Current are the addresses its status lists: kept while still
	// valid, so allocation is stable.
	Current []netip.Addr
	// Ours are those of Current its status marks as a proxy's (ipMode
	// Proxy, as this controller writes them). One that no pool holds any
	// more (its pool deleted, or unreadable when the controller started)
	// stays with the Service, and is never handed out again, unless
	// another Service's status lists it too (not sharing a key with it:
	// the single-address mode's status, where every Service lists one).
	Ours []netip.Addr
	// KeepOnly: what it asks could not be read; it keeps its current
	// addresses and gets nothing new. Also a reservation: what another
	// controller's object (a Gateway seen by the Services mode, a Service
	// seen by the gateway mode) holds, so that neither hands it out again.
	KeepOnly bool
	// Exact: it wants every address of IPs and nothing else, several of
	// one family allowed (a Gateway's spec.addresses); Families must
	// list their families.
	Exact bool
	// Created orders requests of different kinds (SortRequests): the
	// older keeps an address two claim.
	Created time.Time
}

// Event reasons of Problems.
const (
	ReasonTaken       = "AddressTaken"
	ReasonNotInPool   = "AddressNotInPool"
	ReasonWrongFamily = "AddressWrongFamily"
	ReasonExhausted   = "AddressPoolExhausted"
	ReasonNoPool      = "NoAddressPool"
)

// Problem is why a Service did not get (all) the addresses it asked for.
type Problem struct {
	Key, Reason, Message string
}

// Counts are a pool's numbers for its status: addresses in use and free
// (saturated at MaxInt64 for large IPv6 ranges).
type Counts struct{ Assigned, Free int64 }

// Result is the outcome of Allocate.
type Result struct {
	// Assigned lists each served request's addresses, IPv4 first.
	Assigned map[string][]netip.Addr
	// Pending: addresses given that cannot be used before they are
	// claimed (SplitClaimed), by request; nil without claims.
	Pending  map[string][]netip.Addr
	Problems []Problem
	Pools    map[string]Counts
}

type user struct {
	keys  []string
	share string // "" when not shareable
	ports []Port
}

type state struct {
	pools   []*Pool
	byName  map[string]*Pool
	used    map[netip.Addr]*user
	claimed Claims
	holders map[string]bool // keys of the requests holding a claim
	cursor  map[*Range]netip.Addr
	res     Result
}

// Allocate assigns addresses to reqs from pools.
func Allocate(pools []Pool, reqs []Request) Result { return AllocateClaimed(pools, reqs, nil) }

// AllocateClaimed is Allocate where some addresses are claimed (claims.go).
func AllocateClaimed(pools []Pool, reqs []Request, claimed Claims) Result {
	st := &state{byName: map[string]*Pool{}, used: make(map[netip.Addr]*user, len(reqs)), cursor: map[*Range]netip.Addr{},
		claimed: claimed, res: Result{Assigned: make(map[string][]netip.Addr, len(reqs)), Pools: map[string]Counts{}}}
	for i := range pools {
		st.pools = append(st.pools, &pools[i])
		st.byName[pools[i].Name] = &pools[i]
	}
	slices.SortStableFunc(st.pools, func(a, b *Pool) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	st.keepCurrents(reqs)
	st.keepOrphans(reqs)
	for i := range reqs {
		st.serve(&reqs[i])
	}
	for _, p := range st.pools {
		var size, assigned int64
		for _, rg := range p.Ranges {
			size = addSat(size, rg.size())
		}
		for a := range st.used {
			if st.owner(a) == p {
				assigned++
			}
		}
		assigned += st.claimedUnused(p)
		free := size - assigned
		if size == math.MaxInt64 {
			free = math.MaxInt64
		}
		st.res.Pools[p.Name] = Counts{Assigned: assigned, Free: free}
	}
	for k, as := range st.res.Assigned {
		slices.SortFunc(as, func(a, b netip.Addr) int { return a.Compare(b) })
		st.res.Assigned[k] = as
	}
	return st.res
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

func families(r *Request) []int {
	if len(r.Families) == 0 {
		return []int{4}
	}
	return r.Families
}

func wants(r *Request, f int) bool { return slices.Contains(families(r), f) }

func (st *state) has(r *Request, f int) bool {
	return slices.ContainsFunc(st.res.Assigned[r.Key], func(a netip.Addr) bool { return family(a) == f })
}

// owner is the first pool (by priority, name) holding a.
func (st *state) owner(a netip.Addr) *Pool {
	for _, p := range st.pools {
		if p.holds(a) {
			return p
		}
	}
	return nil
}

// keepable: a current address still matches what r asks and lies in a
// pool that serves r.
func (st *state) keepable(r *Request, a netip.Addr) bool {
	if len(r.IPs) > 0 && !slices.Contains(r.IPs, a) {
		return false
	}
	if r.Pool != "" {
		p := st.byName[r.Pool]
		return p != nil && p.holds(a) && p.serves(r)
	}
	for _, p := range st.pools {
		if p.holds(a) && p.serves(r) {
			return true
		}
	}
	return false
}

// free reports whether r may use a: nobody has it, or everyone who has
// it shares r's key and no port clashes.
func (st *state) free(r *Request, a netip.Addr) bool {
	u := st.used[a]
	if st.claimedByOther(r, a) {
		return false
	}
	if u == nil {
		return true
	}
	if r.ShareKey == "" || u.share != r.ShareKey || slices.Contains(u.keys, r.Key) {
		return false
	}
	for _, p := range r.Ports {
		if slices.Contains(u.ports, p) {
			return false
		}
	}
	return true
}

func (st *state) take(r *Request, a netip.Addr) {
	u := st.used[a]
	if u == nil {
		u = &user{share: r.ShareKey}
		st.used[a] = u
	}
	u.keys = append(u.keys, r.Key)
	if r.ShareKey != "" { // only shared addresses compare ports
		u.ports = append(u.ports, r.Ports...)
	}
	st.res.Assigned[r.Key] = append(st.res.Assigned[r.Key], a)
}

func (st *state) problem(r *Request, reason, msg string) {
	st.res.Problems = append(st.res.Problems, Problem{r.Key, reason, msg})
}

// serve gives r an address of every family it wants and lacks.
func (st *state) serve(r *Request) {
	if r.KeepOnly {
		return
	}
	if r.Exact {
		st.serveExact(r)
		return
	}
	for _, a := range r.IPs {
		if !wants(r, family(a)) {
			st.problem(r, ReasonWrongFamily, "address "+a.String()+" is not of the Service's IP families "+familyList(r))
		}
	}
	for _, f := range families(r) {
		if st.has(r, f) {
			continue
		}
		if len(r.IPs) > 0 {
			st.serveAsked(r, f)
			continue
		}
		if st.shared(r, f) || st.fresh(r, f) {
			continue
		}
		st.keepCurrent(r, f)
	}
}

// serveAsked serves an address r asks for by name.
func (st *state) serveAsked(r *Request, f int) {
	i := slices.IndexFunc(r.IPs, func(a netip.Addr) bool { return family(a) == f })
	if i < 0 {
		return // only the families asked for
	}
	if !st.claim(r, r.IPs[i], "Service") {
		st.keepCurrent(r, f)
	}
}

// claim gives r the address a it asks for by name, if a pool that serves
// r (the one it names, if any) holds a and a is free; else it reports
// why as a Problem of r (what: "Service", "Gateway") and returns false.
func (st *state) claim(r *Request, a netip.Addr, what string) bool {
	var in *Pool
	for _, p := range st.pools {
		if p.holds(a) && (r.Pool == "" || p.Name == r.Pool) && p.serves(r) && !p.Frozen {
			in = p
			break
		}
	}
	switch {
	case in == nil:
		st.problem(r, ReasonNotInPool, "address "+a.String()+" is in no AddressPool that serves this "+what)
	case !st.free(r, a):
		st.problem(r, ReasonTaken, "address "+a.String()+" is taken by "+st.takenBy(a)+sharedHint(st.used[a], r))
	default:
		st.take(r, a)
		return true
	}
	return false
}

// keepCurrent lets r keep a current address of family f after what it
// asks for could not be had: nothing changes for it.
func (st *state) keepCurrent(r *Request, f int) {
	for _, a := range r.Current {
		if family(a) == f && st.owner(a) != nil && st.free(r, a) {
			st.take(r, a)
			return
		}
	}
}

func sharedHint(u *user, r *Request) string {
	if u != nil && r.ShareKey != "" && u.share == r.ShareKey {
		return " (same allow-shared-ip key, but a port clashes)"
	}
	return ""
}

// candidates are the pools r may get a new address from.
func (st *state) candidates(r *Request) []*Pool {
	if r.Pool != "" {
		if p := st.byName[r.Pool]; p != nil && p.serves(r) && !p.Frozen {
			return []*Pool{p}
		}
		return nil
	}
	var out []*Pool
	for _, p := range st.pools {
		if p.AutoAssign && p.serves(r) && !p.Frozen {
			out = append(out, p)
		}
	}
	return out
}

// shared gives r an address of family f that Services with its
// allow-shared-ip key already use, when the ports allow.
func (st *state) shared(r *Request, f int) bool {
	if r.ShareKey == "" {
		return false
	}
	pools := st.candidates(r)
	var best netip.Addr
	for a, u := range st.used {
		if family(a) != f || u.share != r.ShareKey || !st.free(r, a) {
			continue
		}
		if !slices.ContainsFunc(pools, func(p *Pool) bool { return p.holds(a) }) {
			continue
		}
		if !best.IsValid() || a.Less(best) {
			best = a
		}
	}
	if best.IsValid() {
		st.take(r, best)
		return true
	}
	return false
}

// fresh gives r the next unused address of family f from its pools.
func (st *state) fresh(r *Request, f int) bool {
	pools := st.candidates(r)
	if len(pools) == 0 {
		what := "no AddressPool with autoAssign serves this Service"
		if r.Pool != "" {
			what = "AddressPool " + settings.ShowName(r.Pool) + " does not exist or does not serve this Service"
		}
		st.problem(r, ReasonNoPool, what)
		return false
	}
	for _, p := range pools {
		for i := range p.Ranges {
			rg := &p.Ranges[i]
			if family(rg.First) != f {
				continue
			}
			a, ok := st.cursor[rg]
			if !ok {
				a = rg.First
			}
			for ; a.IsValid() && rg.Contains(a); a = a.Next() {
				if st.used[a] == nil && st.free(r, a) {
					st.cursor[rg] = a.Next()
					st.take(r, a)
					return true
				}
			}
			st.cursor[rg] = a
		}
	}
	fam := "IPv" + string(rune('0'+f))
	if !slices.ContainsFunc(pools, func(p *Pool) bool { return p.hasFamily(f) }) {
		st.problem(r, ReasonExhausted, "AddressPool(s) "+poolNames(pools)+" have no "+fam+" addresses; the Service waits")
		return false
	}
	st.problem(r, ReasonExhausted, "no free "+fam+" address in AddressPool(s) "+poolNames(pools)+"; the Service waits")
	return false
}

// hasFamily reports whether p has addresses of family f (4 or 6).
func (p *Pool) hasFamily(f int) bool {
	return slices.ContainsFunc(p.Ranges, func(rg Range) bool { return family(rg.First) == f })
}

func poolNames(ps []*Pool) string {
	n := make([]string, len(ps))
	for i, p := range ps {
		n[i] = p.Name
	}
	return strings.Join(n, ", ")
}

func familyList(r *Request) string {
	s := ""
	for i, f := range families(r) {
		if i > 0 {
			s += ","
		}
		s += "IPv" + string(rune('0'+f))
	}
	return s
}
