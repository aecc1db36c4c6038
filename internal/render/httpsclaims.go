package render

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Which frontends share the fixed HTTPS listener (httpslistener.go), and
// why that is first-come. HAProxy chooses the certificate by the server
// name alone, whatever the address, so a frontend shares it only when no
// name of its certificates is matched (the same name, or a wildcard and a
// name it covers) by a different certificate of another shared frontend.
// Of two frontends that clash, the one that held the name keeps it: the
// names the listener served before (model.Config.HTTPSHeld, each with the
// frontend it served it for) are claimed first by the frontends that
// still have them (the holders, with their certificates of now: a new
// Secret keeps the name), then the holders, then the others take their
// names in cfg's order (by name). A newcomer that clashes keeps
// its own frontend, whatever its name; a holder that now clashes with a
// name another holder held (its own change) loses its hold, and the claims
// are made again without it. Once the holder of a name is gone, the next
// pass gives the name to the first frontend that asks.
//
// The held names are kept between passes by HTTPSHolds (its owner,
// tproxy.Ordered, hands one Config to HAProxy's driver and to the
// kernel's sets, so both read the same claims). After a restart they are
// what the running listener's files hold (RunningHTTPS: its map's
// frontends, its crt-list's names and certificates; the files on disk
// describe what runs), so the listener converges to what it served; with
// nothing known (a fresh HAProxy, `render`), name order.

// HTTPSListened is the one predicate of the fixed HTTPS listener: the
// names of the frontends of cfg it serves (nil without it). Each is
// httpsShareable, and no server name of its certificates is matched by a
// different certificate of another frontend it serves, the holders of
// cfg.HTTPSHeld first (above). The same certificate (one Secret) on two
// frontends is one line serving both's names.
// A Config that carries its claims (model.Config.HTTPSClaimed, ClaimHTTPS)
// has them returned as they are, with options that have the listener.
func (o Options) HTTPSListened(cfg model.Config) map[string]bool {
	if cfg.HTTPSClaimed != nil && o.HTTPSListener() {
		return cfg.HTTPSClaimed.Names
	}
	return o.claimHTTPS(cfg) // nil without the listener
}

// ClaimHTTPS is cfg carrying its fixed HTTPS listener's claims
// (HTTPSListened, made again), for every consumer of the pass to read.
// The names are not to be changed.
func (o Options) ClaimHTTPS(cfg model.Config) model.Config {
	cfg.HTTPSClaimed = &model.Claimed{Names: o.claimHTTPS(cfg)}
	return cfg
}

func (o Options) claimHTTPS(cfg model.Config) map[string]bool {
	if !o.HTTPSListener() {
		return nil
	}
	var cands []int
	for i := range cfg.Frontends {
		// Most frontends are a Service's (TCP): not copied to be asked.
		if f := &cfg.Frontends[i]; f.HTTP != nil && f.TLS != nil && o.httpsShareable(*f) {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	held := make(map[model.HeldName]bool, len(cfg.HTTPSHeld))
	for _, h := range cfg.HTTPSHeld {
		held[h] = true
	}
	holders := map[int]bool{}
	for _, i := range cands {
		if holds(cfg.Frontends[i], held) {
			holders[i] = true
		}
	}
	for { // each round drops a holder: at most one per frontend
		in, lost := claimRound(cfg.Frontends, cands, holders, held)
		if lost < 0 {
			return in
		}
		delete(holders, lost)
	}
}

// claimRound is one round of the claims: the holders' held names claimed,
// then each holder and each other candidate taking its names in turn.
// lost is the first holder that could not (-1: none; the round stands).
func claimRound(fronts []model.Frontend, cands []int, holders map[int]bool, held map[model.HeldName]bool) (in map[string]bool, lost int) {
	var c sniClaims
	for _, i := range cands {
		if holders[i] {
			name, ca := fronts[i].Name, heldCA(fronts[i].TLS)
			c.take(fronts[i].TLS, i, func(s string) bool { return held[model.HeldName{SNI: s, Front: name, CA: ca}] })
		}
	}
	for _, first := range []bool{true, false} {
		for _, i := range cands {
			if holders[i] != first {
				continue
			}
			t := fronts[i].TLS
			if !c.free(t, i) {
				if first {
					return nil, i
				}
				continue
			}
			c.take(t, i, nil)
			if in == nil {
				in = map[string]bool{}
			}
			in[fronts[i].Name] = true
		}
	}
	return in, -1
}

// heldCA is the client CA a frontend's lines verify with on the
// listener ("": none), as model.HeldName records it: a frontend whose
// verification changed (turned on or off, another CA) holds none of the
// names it held, so where its new line clashes with another holder's,
// the one that changed gives way, whatever their names' order.
func heldCA(t *model.TLS) string {
	if t.Client == nil {
		return ""
	}
	return t.Client.CA
}

// holds reports whether f still has a name held for it.
func holds(f model.Frontend, held map[model.HeldName]bool) bool {
	for _, cert := range f.TLS.Certificates {
		for _, s := range cert.SNI {
			if held[model.HeldName{SNI: strings.ToLower(s), Front: f.Name, CA: heldCA(f.TLS)}] {
				return true
			}
		}
	}
	return false
}

// ListenerCertName is the name, on the fixed HTTPS listener, of
// certificate c of a frontend whose TLS is t: its own, or, for a
// frontend verifying its clients (verifiesShared), one of its own and
// its CA's. A crt-list line verifies for all its names, so one Secret
// served verified by one frontend and unverified by another (or with
// another CA) is two files and two lines; and its names clash as two
// certificates' do.
func ListenerCertName(t *model.TLS, c model.Certificate) string {
	if t.Client == nil {
		return c.Name
	}
	return model.Name("vcert", c.Name, t.Client.CA)
}

// claim is a server name's certificate and the frontend (its index) that
// claimed it: a frontend's own certificates never clash with each other.
type claim struct {
	cert  string
	owner int
}

// clashes reports whether c is another frontend's claim with another
// certificate.
func (c claim) clashes(cert string, owner int) bool { return c.cert != cert && c.owner != owner }

// sniClaims are the server names taken by the listened frontends' certificates
// (ListenerCertName): exact names and wildcards' suffixes
// ("*.example.com": "example.com").
type sniClaims struct {
	exact, wild map[string]claim
}

// free reports whether none of t's names (of frontend owner) is matched
// by another frontend's claim with another certificate, nor matches one.
// Frontends verifying with different client CAs share the listener: its
// one bind resumes a TLS session whatever line made it, and the host
// rules refuse a resumed session whose client certificate's issuer the
// host has not seen its own line verify (render/hostauth.go; measured
// before them: a session of a third Gateway's line, its CA verifying
// another client, resumed under the verifying Gateway's name with no
// certificate and served; TestHTTPSListenerClientValidation).
func (c *sniClaims) free(t *model.TLS, owner int) bool {
	for _, cert := range t.Certificates {
		cert.Name = ListenerCertName(t, cert)
		for _, s := range cert.SNI {
			s = strings.ToLower(s)
			if suffix, ok := strings.CutPrefix(s, "*."); ok {
				if other, ok := c.wild[suffix]; ok && other.clashes(cert.Name, owner) {
					return false
				}
				for name, other := range c.exact { // a few names: the HTTPS Gateways'
					if other.clashes(cert.Name, owner) && parentOf(name) == suffix {
						return false
					}
				}
				continue
			}
			if other, ok := c.exact[s]; ok && other.clashes(cert.Name, owner) {
				return false
			}
			if other, ok := c.wild[parentOf(s)]; ok && other.clashes(cert.Name, owner) {
				return false
			}
		}
	}
	return true
}

// take claims t's names for frontend owner: only those only lets in when
// it is set.
func (c *sniClaims) take(t *model.TLS, owner int, only func(string) bool) {
	if c.exact == nil {
		c.exact, c.wild = map[string]claim{}, map[string]claim{}
	}
	for _, cert := range t.Certificates {
		cert.Name = ListenerCertName(t, cert)
		for _, s := range cert.SNI {
			s = strings.ToLower(s)
			if only != nil && !only(s) {
				continue
			}
			if suffix, ok := strings.CutPrefix(s, "*."); ok {
				c.wild[suffix] = claim{cert.Name, owner}
			} else {
				c.exact[s] = claim{cert.Name, owner}
			}
		}
	}
}

// parentOf is a name less its first label ("" for one label): what a
// wildcard matching it ends with.
func parentOf(name string) string {
	_, p, _ := strings.Cut(name, ".")
	return p
}

// HTTPSHeldOf are the names the fixed HTTPS listener serves for cfg, each
// with its frontend: the next pass's model.Config.HTTPSHeld. Sorted,
// no duplicates; nil without the listener or a frontend behind it.
func HTTPSHeldOf(cfg model.Config, o Options) []model.HeldName {
	in := o.HTTPSListened(cfg)
	var out []model.HeldName
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		if f.HTTP == nil || f.TLS == nil || !in[f.Name] {
			continue
		}
		for _, cert := range f.TLS.Certificates {
			for _, s := range cert.SNI {
				out = append(out, model.HeldName{SNI: strings.ToLower(s), Front: f.Name, CA: heldCA(f.TLS)})
			}
		}
	}
	slices.SortFunc(out, model.CompareHeld)
	return slices.Compact(out)
}

// RunningHTTPS is what the running fixed HTTPS listener's files say it
// serves: the frontends its map names (HTTPSListenerMapFile) and the
// server names of its crt-list, each with its certificate. The zero
// value knows nothing.
type RunningHTTPS struct {
	Fronts []string
	Served []ServedName
}

// ServedName is a server name of a crt-list and its certificate's name.
type ServedName struct{ SNI, Cert string }

// RunningHTTPSOf reads the fixed HTTPS listener's map and crt-list
// contents (certificates under certDir): the map's frontends, and each
// crt-list line's certificate and server names, the default line and
// anything that is not a valid certificate name or server name left out.
// Sorted, no duplicates.
func RunningHTTPSOf(certDir string, mapContent, crtList []byte) RunningHTTPS {
	var r RunningHTTPS
	for line := range strings.Lines(string(mapContent)) {
		if f := strings.Fields(line); len(f) == 2 { // key, frontend: only looked up among the model's
			r.Fronts = append(r.Fronts, f[1])
		}
	}
	slices.Sort(r.Fronts)
	r.Fronts = slices.Compact(r.Fronts)
	def := DefaultCertFile(certDir, HTTPSListenerFrontend)
	for line := range strings.Lines(string(crtList)) {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] == def {
			continue
		}
		name, ok := strings.CutPrefix(fields[0], certDir+"/")
		if name, ok = strings.CutSuffix(name, ".pem"); !ok || !model.ValidCertName(name) {
			continue
		}
		opts := false
		for _, f := range fields[1:] {
			switch {
			case opts || strings.HasPrefix(f, "["):
				opts = !strings.HasSuffix(f, "]")
			case model.ValidSNI(f):
				r.Served = append(r.Served, ServedName{SNI: strings.ToLower(f), Cert: name})
			}
		}
	}
	slices.SortFunc(r.Served, func(a, b ServedName) int {
		if c := strings.Compare(a.SNI, b.SNI); c != 0 {
			return c
		}
		return strings.Compare(a.Cert, b.Cert)
	})
	r.Served = slices.Compact(r.Served)
	return r
}

// held are the names r says the listener served for cfg's frontends:
// each name a frontend of its map has now with a certificate its crt-list
// serves that name with.
func (r RunningHTTPS) held(cfg model.Config) []model.HeldName {
	if len(r.Fronts) == 0 {
		return nil
	}
	var out []model.HeldName
	for _, f := range cfg.Frontends {
		if f.TLS == nil {
			continue
		}
		if _, ok := slices.BinarySearch(r.Fronts, f.Name); !ok {
			continue
		}
		for _, cert := range f.TLS.Certificates {
			name := ListenerCertName(f.TLS, cert) // as the crt-list names it
			for _, s := range cert.SNI {
				s = strings.ToLower(s)
				if slices.Contains(r.Served, ServedName{s, name}) {
					out = append(out, model.HeldName{SNI: s, Front: f.Name, CA: heldCA(f.TLS)})
				}
			}
		}
	}
	slices.SortFunc(out, model.CompareHeld)
	return slices.Compact(out)
}

// HTTPSHolds keeps the fixed HTTPS listener's held names from pass to
// pass (pure: no I/O): Hold gives a pass's Config the names of the last
// one Took, the first pass those the running listener's files name. One
// pass at a time; a nil *HTTPSHolds holds nothing.
type HTTPSHolds struct {
	held    []model.HeldName
	running *RunningHTTPS // until the first Hold
}

// NewHTTPSHolds starts from what the running listener serves (the zero
// RunningHTTPS: nothing known).
func NewHTTPSHolds(running RunningHTTPS) *HTTPSHolds { return &HTTPSHolds{running: &running} }

// Hold is cfg with the names held (cfg itself without a memo).
func (h *HTTPSHolds) Hold(cfg model.Config) model.Config {
	if h == nil {
		return cfg
	}
	if h.running != nil {
		h.held, h.running = h.running.held(cfg), nil
	}
	cfg.HTTPSHeld = h.held
	return cfg
}

// Took keeps what cfg (given Hold's names) has the listener serve, once
// it runs.
func (h *HTTPSHolds) Took(cfg model.Config, o Options) {
	if h != nil {
		h.held, h.running = HTTPSHeldOf(cfg, o), nil
	}
}
