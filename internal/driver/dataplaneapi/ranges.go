package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Source ranges (spec.loadBalancerSourceRanges) without a reload. Each
// restricted frontend's rule reads its ranges from two files of its own,
// one per family, FRONTEND_ipv4.acl and FRONTEND_ipv6.acl in the API's
// general storage, and checks each client against those of its own family
// only (render.SourceCondition: HAProxy alone would try an IPv4 client
// against IPv6 patterns as ::ffff:a.b.c.d):
//
//	tcp-request connection reject unless { src ::ffff:0:0/96 } { src -f /GENERAL_STORAGE/FRONTEND_ipv4.acl } ||
//	        !{ src ::ffff:0:0/96 } { src -f /GENERAL_STORAGE/FRONTEND_ipv6.acl }
//
// (one line; content instead of connection with the PROXY protocol). A
// family without ranges has a file all the same, holding a pattern none
// of its clients matches (render.ACLLines). The rule never
// changes while the frontend stays restricted, so a change of its ranges
// is no change of haproxy.cfg: the file is replaced on disk first
// (PUT .../storage/general/NAME?skip_reload=true: no reload, no new
// configuration version), so that a HAProxy that reloads or restarts
// loads the new ranges, and the running worker then gets them in one
// atomic step (PUT .../runtime/acls/FILE/entries: prepare, add, commit):
// until it ends the old ranges are in force whole, then the new ones.
// Measured on the real API v3.4.0 + HAProxy 2.6.12: 1.3-2 ms (up to 15 ms)
// for the file, about 1 ms for the runtime step, no reload; a reload
// costs 0.6-1.3 s.
//
// A frontend becoming restricted (the rule appears) or unrestricted (it
// goes) is a structural change as before: its file is created before the
// configuration names it (HAProxy refuses a rule whose file is missing),
// and deleted once the configuration no longer does. The file holds the
// prefixes as the model parsed them, one per line, printed by
// netip.Prefix: nothing a user writes reaches it, or haproxy.cfg, as text.
// Releases before the per-family check wrote one file, FRONTEND.acl, with
// both families: the rule naming it differs from the one wanted, so the
// first pass writes the frontend (a reload), and the file, no longer
// used, is deleted.

const aclSuffix = ".acl"

// fam is the index of a family in render.ACLFamily and aclText.
func fam(v6 bool) int {
	if v6 {
		return 1
	}
	return 0
}

// aclFiles is what the driver knows of its ACL files, by storage name.
type aclFiles struct {
	listed  bool              // paths holds every file of ours the storage has
	paths   map[string]string // the file's absolute path, as the API reported it
	disk    map[string]string // the content on disk, when known
	running map[string]string // the content the running worker holds, when known
	pid     int64             // the worker running describes (0: none)
	// text is each restricted frontend's ranges as printed (by frontend
	// name), made once when its ranges change (texts), not by each of the
	// file, the running list and the rule of every pass.
	text map[string]aclText
	// retry is when a file no longer used whose delete failed (409 while
	// haproxy.cfg still names it, say) is tried again (pruneACLFiles),
	// and how long the wait after that one doubles to.
	retry map[string]pruneRetry
}

// aclText is a frontend's ranges and their text, per family (render.ACLFamily):
// the lines each file holds and the running list takes, and the file's
// body.
type aclText struct {
	ranges []netip.Prefix
	lines  [2][]string
	body   [2]string
}

// aclName is the stored file of a frontend's ranges of one family.
// (render.ACLFileName: the local HAProxy's name too).
func aclName(frontend string, v6 bool) string { return render.ACLFileName(frontend, v6) }

// aclOwner is the frontend a stored file is named for, when it is one of
// the driver's: the file of a family, or an older release's file of both
// (FRONTEND.acl, which no rule of this release names).
func aclOwner(name string) (string, bool) {
	fe, ok := strings.CutSuffix(name, aclSuffix)
	if !ok {
		return "", false
	}
	for _, f := range render.ACLFamily {
		if x, cut := strings.CutSuffix(fe, f); cut {
			fe = x
			break
		}
	}
	return fe, strings.HasPrefix(fe, "fe_") && Owned(fe)
}

// ourACL reports whether a stored file is one of the driver's: named for
// a frontend it owns.
func ourACL(name string) bool {
	_, ok := aclOwner(name)
	return ok
}

// aclUsed reports whether a stored file of ours is one a rule of the
// pass's model names (a.text holds its restricted frontends: texts).
func (a *aclFiles) aclUsed(name string) bool {
	fe, ok := aclOwner(name)
	if _, restricted := a.text[fe]; !ok || !restricted {
		return false
	}
	return name == aclName(fe, false) || name == aclName(fe, true)
}

// aclPathRe is a path HAProxy reads as one word, with nothing to escape.
var aclPathRe = regexp.MustCompile(`^(/[A-Za-z0-9._-]+)+$`)

func validACLPath(p string) bool {
	return aclPathRe.MatchString(p) && !slices.Contains(strings.Split(p, "/"), "..")
}

// texts makes a.text hold the restricted frontends of cfg (once per pass,
// reusing what was made for the same ranges before).
func (a *aclFiles) texts(cfg model.Config) {
	next := make(map[string]aclText, len(a.text))
	for _, f := range cfg.Frontends {
		if !f.Restricted() {
			continue
		}
		next[f.Name] = a.textOf(f)
	}
	a.text = next
}

// textOf is f's ranges as printed: made by texts this pass, or now.
func (a *aclFiles) textOf(f model.Frontend) aclText {
	if t, ok := a.text[f.Name]; ok && slices.Equal(t.ranges, f.SourceRanges) {
		return t
	}
	t := aclText{ranges: f.SourceRanges}
	for _, v6 := range []bool{false, true} {
		t.lines[fam(v6)] = render.ACLLines(f, v6)
		t.body[fam(v6)] = aclBody(t.lines[fam(v6)])
	}
	return t
}

func aclBody(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// sameRanges reports whether entries (as HAProxy lists them) are the
// prefixes of lines, in any order.
func sameRanges(entries, lines []string) bool {
	norm := func(ss []string) []string {
		out := make([]string, 0, len(ss))
		for _, s := range ss {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				if a, aerr := netip.ParseAddr(s); aerr == nil {
					p = netip.PrefixFrom(a, a.BitLen())
				} else {
					return nil
				}
			}
			out = append(out, p.Masked().String())
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	a, b := norm(entries), norm(lines)
	return a != nil && b != nil && slices.Equal(a, b)
}

// syncACLFiles makes the file of every restricted frontend of cfg hold
// its ranges on disk (created or replaced: no reload), before the pass
// works out the configuration, whose rules name the files.
func (d *Driver) syncACLFiles(ctx context.Context, cfg model.Config, p *Pass) error {
	if d.opts.Seed != "" {
		return nil
	}
	a := &d.acl
	a.texts(cfg)
	if !a.listed {
		// What is known of a file still listed stays known (a resync
		// lists again: a file deleted behind the driver's back is made
		// anew, before a reload misses it).
		files, err := d.c.GeneralFiles(ctx)
		if err != nil {
			return fmt.Errorf("source ranges: %w", err)
		}
		paths := map[string]string{}
		for _, f := range files {
			if ourACL(f.StorageName) {
				paths[f.StorageName] = f.File
			}
		}
		if a.disk == nil {
			a.disk, a.running = map[string]string{}, map[string]string{}
		}
		for name := range a.disk {
			if _, ok := paths[name]; !ok {
				delete(a.disk, name)
				delete(a.running, name)
			}
		}
		for name := range a.retry {
			if _, ok := paths[name]; !ok {
				delete(a.retry, name) // gone meanwhile
			}
		}
		a.paths, a.listed = paths, true
	}
	for _, f := range cfg.Frontends {
		if !f.Restricted() {
			continue
		}
		for _, v6 := range []bool{false, true} {
			if err := d.syncACLFile(ctx, f, aclName(f.Name, v6), a.textOf(f).body[fam(v6)], p); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncACLFile makes the stored file name of f hold body.
func (d *Driver) syncACLFile(ctx context.Context, f model.Frontend, name, body string, p *Pass) error {
	a := &d.acl
	if _, ok := a.paths[name]; !ok {
		sf, err := d.c.CreateGeneralFile(ctx, name, []byte(body))
		if errors.Is(err, dataplane.ErrExists) {
			a.listed = false // someone else made it: list again next time
		}
		if err != nil {
			return fmt.Errorf("source ranges of %s: %w", f.Service, err)
		}
		p.Writes++
		if !validACLPath(sf.File) {
			return fmt.Errorf("source ranges of %s: the API stores %s at %q, which haproxy.cfg cannot name", f.Service, name, sf.File)
		}
		a.paths[name], a.disk[name] = sf.File, body
		return nil
	}
	cur, known := a.disk[name]
	if !known {
		data, err := d.c.GeneralFile(ctx, name)
		if err != nil {
			return fmt.Errorf("source ranges of %s: %w", f.Service, err)
		}
		cur = string(data)
	}
	if cur != body {
		delete(a.disk, name) // unknown until the write succeeds
		if err := d.c.ReplaceGeneralFile(ctx, name, []byte(body)); err != nil {
			return fmt.Errorf("source ranges of %s: %w", f.Service, err)
		}
		p.Writes++
	}
	a.disk[name] = body
	return nil
}

// rangesReloaded: HAProxy reloaded with the files as they are on disk.
// The configuration changed, so a file whose delete failed before may go
// now: each is tried again at once.
func (d *Driver) rangesReloaded(ctx context.Context) {
	d.acl.running, d.acl.pid = maps.Clone(d.acl.disk), d.pid
	for name, r := range d.acl.retry {
		r.at = time.Time{}
		d.acl.retry[name] = r
	}
	d.pruneACLFiles(ctx)
}

// pushRanges gives the running worker the ranges on disk where it holds
// others, in one atomic step per file; the configuration is as the pass
// wants it (no rule changed). When what it holds is not known (a new
// driver), it is read first, so nothing is written when nothing differs.
func (d *Driver) pushRanges(ctx context.Context, cfg model.Config, p *Pass) error {
	if d.opts.Seed != "" {
		return nil
	}
	t := time.Now()
	defer func() { p.Runtime += time.Since(t) }()
	a := &d.acl
	switch {
	case a.pid == 0:
		a.running = map[string]string{}
	case a.pid != d.pid:
		a.running = maps.Clone(a.disk) // a new worker loaded the files
	}
	a.pid = d.pid
	var ids map[string]string // path → runtime ACL id, read once when needed
	for _, f := range cfg.Frontends {
		if !f.Restricted() {
			continue
		}
		for _, v6 := range []bool{false, true} {
			name := aclName(f.Name, v6)
			body, path := a.disk[name], a.paths[name]
			if cur, ok := a.running[name]; (ok && cur == body) || path == "" {
				continue
			}
			lines := a.textOf(f).lines[fam(v6)]
			if _, ok := a.running[name]; !ok {
				if ids == nil {
					var err error
					if ids, err = d.runtimeACLs(ctx); err != nil {
						return err
					}
				}
				id, loaded := ids[path]
				if !loaded {
					continue // the worker does not use the file (yet)
				}
				entries, err := d.c.RuntimeACLEntries(ctx, id)
				if err != nil && !errors.Is(err, dataplane.ErrNotFound) {
					return fmt.Errorf("source ranges of %s: %w", f.Service, err)
				}
				if sameRanges(entries, lines) {
					a.running[name] = body
					continue
				}
			}
			delete(a.running, name)
			if err := d.c.ReplaceRuntimeACL(ctx, path, lines); err != nil {
				return fmt.Errorf("source ranges of %s: %w", f.Service, err)
			}
			p.Writes++
			a.running[name] = body
			d.log.Info("source ranges changed without reload", "service", f.Service, "frontend", f.Name)
		}
	}
	d.pruneACLFiles(ctx)
	return nil
}

func (d *Driver) runtimeACLs(ctx context.Context) (map[string]string, error) {
	acls, err := d.c.RuntimeACLs(ctx)
	if err != nil {
		return nil, fmt.Errorf("source ranges: %w", err)
	}
	ids := make(map[string]string, len(acls))
	for _, a := range acls {
		if _, dup := ids[a.StorageName]; !dup {
			ids[a.StorageName] = a.ID
		}
	}
	return ids, nil
}
