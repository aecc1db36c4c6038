package render

import (
	"net/netip"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Source ranges of the spares of the pool behind the fixed listener.
//
// In tproxy mode a restricted Service's rule is in its backend (the
// listener is shared). With the pool (internal/spares) that backend is a
// spare, taken and given back with no reload, so the rule cannot depend on
// which Service occupies it: a spare of a class that checks sources
// (model.Backend.SourceChecked: the pool's class of restricted Services)
// carries one rule, always, reading two ACL files of its own (named by
// the spare, per family: ACLFile(dir, "_pool_N", v6)), and what they hold
// is data the driver changes through the Runtime API: the ranges of the
// Service that occupies it, every client of each family when that
// Service has none (EveryClient), and no client when the spare is free.
// A restricted Service taking or leaving such a spare then changes no
// structure hash. A spare of a class that does not check sources (an
// unrestricted Service's) has no rule and no files: HAProxy 2.6 looks
// every pattern file up in one list of all of them (pat_ref_lookup), at
// start, at each reload and for each `prepare acl`, so two files per
// spare made a start quadratic in the pool (issue 29: 10,000 spares were
// not loaded within 10 minutes). A restricted frontend whose spare does
// not check sources keeps a rule of its own in the spare's section
// (listenedSources): a reload, never a client let in. Without the pool,
// listened frontends keep their own files (listenedSources).

// EveryClient are the ranges of a spare whose occupant lets every client
// in: one prefix of each family, each in its family's file. Behind the
// per-family rule (SourceCondition) an IPv4 client and an IPv4-mapped one
// (::ffff:a.b.c.d) meet 0.0.0.0/0 (HAProxy matches a mapped address that
// misses a list's IPv6 patterns against its IPv4 ones, and this file has
// none), every other IPv6 client ::/0.
var EveryClient = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}

// SpareRanged reports whether the HAProxy backend be carries a spare's
// own source-range rule: a spare of the pool of a class that checks
// sources, in tproxy mode.
func (o Options) SpareRanged(be *model.Backend) bool {
	if !be.SourceChecked { // first: a bool, before a name's parse, for each of 10,000 backends a pass
		return false
	}
	_, ok := model.SpareIndex(be.Name)
	return ok && o.TProxy()
}

// ListenedFunc is Listened in tproxy mode, nil otherwise: what the pool
// takes to mark the spares that check sources (spares.SourceMarks.Behind).
func (o Options) ListenedFunc() func(model.Frontend) bool {
	if !o.TProxy() {
		return nil
	}
	return o.Listened
}

// rangedSpares are the names of cfg's backends that carry a spare's own
// source-range rule (SpareRanged); nil when none does.
func (o Options) rangedSpares(cfg model.Config) map[string]bool {
	if !o.TProxy() {
		return nil
	}
	var out map[string]bool
	for _, be := range cfg.Backends {
		if o.SpareRanged(be) {
			if out == nil {
				out = map[string]bool{}
			}
			out[be.Name] = true
		}
	}
	return out
}

// SpareSourced returns whether a frontend of cfg has its source ranges
// checked by its spare's rule: a listened frontend whose backend is a
// spare that carries one.
func (o Options) SpareSourced(cfg model.Config) func(f model.Frontend) bool {
	return o.spareSourcedBy(o.rangedSpares(cfg))
}

func (o Options) spareSourcedBy(ranged map[string]bool) func(f model.Frontend) bool {
	return func(f model.Frontend) bool { return ranged[f.Backend] && o.Listened(f) }
}

// RangedSpares is the index in cfg.Backends of each backend that carries
// a spare's own source-range rule (SpareRanged), ascending: for a caller
// that keeps it from pass to pass (the driver's, runtimeapi/aclmemo.go)
// and gives it to SpareSourcesAt.
func (o Options) RangedSpares(cfg model.Config) []int {
	var out []int
	if !o.TProxy() {
		return nil
	}
	for i, be := range cfg.Backends {
		if o.SpareRanged(be) {
			out = append(out, i)
		}
	}
	return out
}

// SpareSourcesAt is SpareSources and SpareSourced of cfg with its
// ranged spares given by their index (RangedSpares), not looked for
// among every backend.
func SpareSourcesAt(cfg model.Config, o Options, ranged []int) ([]model.Frontend, func(model.Frontend) bool) {
	names := make(map[string]bool, len(ranged))
	for _, i := range ranged {
		names[cfg.Backends[i].Name] = true
	}
	return spareSources(cfg, o, ranged), o.spareSourcedBy(names)
}

// SpareSources are the source ranges of every spare of cfg (the model
// HAProxy runs, spares.View) in tproxy mode, as frontends named by the
// spare, in cfg's order of backends, for ACLLines and ACLFileContent:
//   - a spare no frontend or route names (free) lets no client in (no
//     ranges);
//   - a spare that listened frontends send to lets in the clients in
//     the ranges of every one of them (EveryClient for an unrestricted
//     one): the same clients as one rule per frontend would;
//   - a spare only other frontends name (a Service on every address, a
//     route, an HTTP table) lets every client in: those frontends keep
//     their own rules.
func SpareSources(cfg model.Config, o Options) []model.Frontend {
	return spareSources(cfg, o, o.RangedSpares(cfg))
}

func spareSources(cfg model.Config, o Options, ranged []int) []model.Frontend {
	if !o.TProxy() || len(ranged) == 0 {
		return nil
	}
	type spare struct {
		used, listened bool
		ranges         []netip.Prefix
	}
	byName := make(map[string]*spare, len(ranged))
	for _, i := range ranged {
		byName[cfg.Backends[i].Name] = &spare{}
	}
	for k := range cfg.Frontends {
		f := &cfg.Frontends[k] // not a copy of each of 10,000
		for _, r := range f.Routes {
			for _, wb := range r.Backends {
				if s := byName[wb.Name]; s != nil {
					s.used = true
				}
			}
		}
		for _, name := range f.HTTP.BackendNames() {
			if s := byName[name]; s != nil {
				s.used = true
			}
		}
		s := byName[f.Backend]
		if s == nil {
			continue
		}
		s.used = true
		if !o.Listened(*f) {
			continue
		}
		ranges := EveryClient
		if f.Restricted() {
			ranges = f.SourceRanges
		}
		if !s.listened {
			s.ranges, s.listened = slices.Clone(ranges), true
		} else {
			s.ranges = intersectRanges(s.ranges, ranges)
		}
	}
	var out []model.Frontend
	for _, i := range ranged {
		be := cfg.Backends[i]
		s := byName[be.Name]
		f := model.Frontend{Name: be.Name, Service: be.Service, Backend: be.Name}
		switch {
		case s.listened:
			f.SourceRanges = s.ranges
		case s.used:
			f.SourceRanges = EveryClient
		}
		out = append(out, f)
	}
	return out
}

// intersectRanges are the prefixes of the clients in both a and b: of
// two prefixes that overlap, one holds the other, and the longer is
// their intersection. Prefixes of different families never overlap.
func intersectRanges(a, b []netip.Prefix) []netip.Prefix {
	out := []netip.Prefix{}
	for _, p := range a {
		for _, q := range b {
			if !p.Overlaps(q) {
				continue
			}
			if p.Bits() >= q.Bits() {
				out = append(out, p.Masked())
			} else {
				out = append(out, q.Masked())
			}
		}
	}
	slices.SortFunc(out, func(x, y netip.Prefix) int { return x.Compare(y) })
	return slices.Compact(out)
}
