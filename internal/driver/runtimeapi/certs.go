package runtimeapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Certificates of the frontends that terminate TLS (render/tls.go): each
// certificate a file of its own in the certificate directory (0600, the
// directory 0700), each such frontend a crt-list there. Like the pattern
// files (filevers.go), the files are written first, so a HAProxy that
// (re)starts loads what is in force, and the running worker is then told
// through the Runtime API, with no reload:
//   - a new certificate: `new ssl cert F`, `set ssl cert F <<PEM`,
//     `commit ssl cert F`, then `add ssl crt-list L <<F names...`;
//   - a changed one (rotation, another default): `set` and `commit`: the
//     handshakes in flight finish with the old one, the next take the new;
//   - one no frontend serves any more: `del ssl crt-list L F`, then
//     `del ssl cert F`, and its file removed.
// HAProxy checks each certificate again on `set ssl cert` (a key that is
// not the certificate's is refused): the pass fails, the transaction is
// aborted and the old certificate keeps serving.
// A reload is needed only for a new terminating frontend (a new
// crt-list on a bind), which is structure.

// certStore is what the running worker holds, as the driver last knew it.
type certStore struct {
	known bool
	pid   string                       // the worker it is known for
	files map[string][sha256.Size]byte // certificate file: digest of its content (zero: unknown)
	lists map[string][]string          // crt-list: its lines (render.CrtListEntry.Line)
	cas   map[string][sha256.Size]byte // CA file the worker holds: digest of its bundle (zero: unknown; cafiles.go)
	// disk: the digest of what the driver last wrote to each file, so
	// that a pass reads no file to find the few that changed.
	disk map[string][sha256.Size]byte
	// renew: the CA files committed since the servers naming them were
	// last renewed (renew.go), their bundles another or unknown.
	renew []string
}

// certWant is what a model wants on disk and in the worker.
type certWant struct {
	files map[string][]byte
	lists map[string][]render.CrtListEntry
	cas   map[string][]byte // CA files (cafiles.go)
	// clients: the files of cas of the backends presenting a client
	// certificate (clientcerts.go).
	clients clientFiles
	// clientCAs: the CA files of frontends' client verification, which
	// the driver creates in a worker that does not hold them.
	clientCAs map[string]bool
	// front: the certificates of the crt-list lines of the frontends
	// verifying their clients, and their CA files (frontcommits.go).
	front clientFiles
	// idleListener: the fixed HTTPS listener's crt-list and default
	// certificate are here with no line of a frontend (httpsdefault.go).
	idleListener bool
}

// CertDir is the directory of the certificates beside a haproxy.cfg at
// configPath: "certs" next to the config, or "" when its absolute name
// is not one HAProxy reads whole.
func CertDir(configPath string) string { return dirBeside(configPath, "certs") }

// certsOf lists the files cfg's terminating frontends need.
func certsOf(opts render.Options, cfg model.Config) certWant {
	dir := opts.CertDir
	w := certWant{files: map[string][]byte{}, lists: map[string][]render.CrtListEntry{}, cas: casOf(dir, cfg),
		clients: clientFilesOf(dir, cfg), clientCAs: clientCAsOf(dir, cfg), front: frontClientFilesOf(opts, cfg)}
	if dir == "" {
		return w
	}
	// The frontends behind the fixed HTTPS listener are lines of its
	// crt-list (render/httpslistener.go); a failure to make its default
	// certificate fails the write of the same directory after this.
	fixed, in, listener := render.HTTPSListenerFront(cfg, opts)
	for _, f := range cfg.Frontends {
		if f.TLS != nil && !in[f.Name] {
			frontCerts(opts, f, &w)
		}
	}
	if listener {
		_ = httpsListenerCerts(opts, &w) // httpsdefault.go
		frontCerts(opts, fixed, &w)
	}
	es, ok := w.lists[render.CrtListFile(dir, render.HTTPSListenerFrontend)]
	w.idleListener = ok && len(es) == 1
	return w
}

// writeCerts writes every file of w whose content differs from what the
// driver last wrote there (disk; without a record, from what the file
// holds): the certificates, then the crt-lists naming them.
func writeCerts(dir string, w certWant, disk map[string][sha256.Size]byte) error {
	if dir == "" || len(w.files) == 0 && len(w.lists) == 0 && len(w.cas) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	write := func(path string, body []byte) error {
		sum := sha256.Sum256(body)
		if old, ok := disk[path]; ok && old == sum {
			return nil
		}
		if old, err := os.ReadFile(path); err != nil || string(old) != string(body) {
			if err := atomicfile.Write(path, body, 0o600); err != nil {
				delete(disk, path)
				return fmt.Errorf("certificate directory: %w", err)
			}
		}
		disk[path] = sum
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(w.files)) {
		if err := write(p, w.files[p]); err != nil {
			return err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(w.cas)) {
		if err := write(p, w.cas[p]); err != nil {
			return err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(w.lists)) {
		var b strings.Builder
		for _, e := range w.lists[p] {
			b.WriteString(e.Line() + "\n")
		}
		if err := write(p, []byte(b.String())); err != nil {
			return err
		}
	}
	return nil
}

// pruneCerts removes the files of the directory that w does not name.
func pruneCerts(dir string, w certWant, disk map[string][sha256.Size]byte) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		_, cert := w.files[p]
		_, list := w.lists[p]
		_, ca := w.cas[p]
		if !cert && !list && !ca && (strings.HasSuffix(p, ".pem") || strings.HasSuffix(p, ".crtlist")) {
			_ = os.Remove(p)
			delete(disk, p)
		}
	}
}

// onDisk is the record of the files written.
func (s *certStore) onDisk() map[string][sha256.Size]byte {
	if s.disk == nil {
		s.disk = map[string][sha256.Size]byte{}
	}
	return s.disk
}

// loaded records that the worker pid loaded w from the files (a
// reload or a start).
func (s *certStore) loaded(w certWant, pid string) {
	s.known, s.pid = true, pid
	s.files, s.cas = digests(w.files), digests(w.cas) // cafiles.go
	s.renew = nil                                     // the servers read the files (renew.go)
	s.lists = make(map[string][]string, len(w.lists))
	for p, es := range w.lists {
		for _, e := range es {
			s.lists[p] = append(s.lists[p], e.Line())
		}
	}
}

// pushCerts brings the running worker's certificates and crt-lists to
// those of cfg, whose structure is the one running.
func (d *HAProxy) pushCerts(ctx context.Context, cfg model.Config, res *driver.Result) error {
	return d.pushCertsOf(ctx, cfg, res, true)
}

// pushRunningCerts, while a reload waits (the reload gate), changes the
// certificates of the frontends that terminate TLS both in what runs and
// in cfg: a rotation does not wait for another frontend's reload. Nothing
// is deleted from the worker's stores (the running frontends cfg drops
// may use them); the reload loads the files and starts afresh. A
// frontend that leaves the fixed HTTPS listener for a frontend of its
// own, or enters it, is taken as it runs until that reload: the
// listener's line keeps serving one that leaves (its set element stays
// too, tproxy.Ordered), and the own crt-list of one that enters is still
// its bind's (before, the leaving one's lines were dropped and an own
// crt-list the worker does not have was edited: the pass failed).
func (d *HAProxy) pushRunningCerts(ctx context.Context, cfg model.Config, res *driver.Result) error {
	running := map[string]int{}
	for i := range d.running.Frontends {
		if d.running.Frontends[i].TLS != nil {
			running[d.running.Frontends[i].Name] = i
		}
	}
	ro := d.opts.Render
	var runIn, cfgIn map[string]bool
	if ro.HTTPSListener() {
		runIn, cfgIn = ro.HTTPSListened(d.running), ro.HTTPSListened(cfg)
	}
	both := model.Config{HTTPSHeld: cfg.HTTPSHeld}
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		r, ok := running[f.Name]
		switch {
		case f.TLS == nil || !ok:
		case runIn[f.Name] != cfgIn[f.Name]:
			both.Frontends = append(both.Frontends, d.running.Frontends[r]) // moves with the reload
		default:
			both.Frontends = append(both.Frontends, *f)
		}
	}
	if len(both.Frontends) == 0 {
		return nil
	}
	return d.pushCertsOf(ctx, both, res, false)
}

// pushCertsOf is pushCerts; without prune, no certificate store is
// deleted and no file removed.
func (d *HAProxy) pushCertsOf(ctx context.Context, cfg model.Config, res *driver.Result, prune bool) error {
	dir := d.opts.Render.CertDir
	w := certsOf(d.opts.Render, cfg)
	if len(w.lists) == 0 && len(w.cas) == 0 && (!d.certs.known || len(d.certs.files) == 0) {
		return nil
	}
	if err := writeCerts(dir, w, d.certs.onDisk()); err != nil {
		return err
	}
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	if !d.certs.known || d.certs.pid != d.pid {
		if err := d.readCerts(ctx, w); err != nil {
			d.certs.known = false
			return fmt.Errorf("runtime API, certificates: %w", err)
		}
	}
	n, err := d.applyCerts(ctx, w, prune)
	res.Ops += n
	if err != nil {
		d.certs.known = false
		return fmt.Errorf("runtime API, certificates: %w", err)
	}
	if n > 0 && prune {
		pruneCerts(dir, w, d.certs.onDisk())
		d.log.Info("certificates changed without reload", "ops", n, "certificates", len(w.files))
	}
	return nil
}

// applyCerts sends the commands that take the worker from d.certs to w,
// in three steps, each checked before the next: certificates created or
// replaced; crt-list lines added, changed and removed; with prune,
// certificates no list names deleted. It returns how many commands it
// sent.
func (d *HAProxy) applyCerts(ctx context.Context, w certWant, prune bool) (int, error) {
	s := &d.certs
	sent := 0
	var stores []haproxy.Command
	var touched []string
	for _, p := range slices.Sorted(maps.Keys(w.files)) {
		sum := sha256.Sum256(w.files[p])
		old, ok := s.files[p]
		if ok && old == sum || ok && d.holdFront(w, p, old) {
			continue
		}
		if !ok {
			stores = append(stores, haproxy.Command{Line: "new ssl cert " + p})
		}
		stores = append(stores, haproxy.Command{Line: "set ssl cert " + p, Payload: w.files[p]},
			haproxy.Command{Line: "commit ssl cert " + p})
		touched = append(touched, p)
	}
	if len(stores) > 0 {
		sent += len(stores)
		ans, err := d.rt.ExecCommands(ctx, stores)
		if err == nil {
			err = committed(stores, ans)
		}
		if err != nil {
			d.abortCerts(ctx, touched)
			return sent, err
		}
		for _, p := range touched {
			s.files[p] = sha256.Sum256(w.files[p])
		}
	}

	n, err := d.applyCAs(ctx, w) // cafiles.go
	sent += n
	if err != nil {
		return sent, err
	}

	var adds, dels []haproxy.Command
	var gone []string
	for _, l := range slices.Sorted(maps.Keys(w.lists)) {
		old := map[string]string{}
		for _, line := range s.lists[l] {
			old[entryFile(line)] = line
		}
		for i, e := range w.lists[l] {
			line, was := e.Line(), old[e.File]
			delete(old, e.File)
			switch {
			case was == line:
			case i == 0 && !prune:
				// A reload is waiting (pushRunningCerts): it loads the
				// file (the default line took `!*` in mtls6).
			case i == 0:
				// The default line never changes (its file does).
				return sent, fmt.Errorf("crt-list %s: default entry %q, want %q: %w", l, was, line, haproxy.ErrCommand)
			case was != "":
				adds = append(adds, haproxy.Command{Line: "del ssl crt-list " + l + " " + e.File})
				fallthrough
			default:
				adds = append(adds, haproxy.Command{Line: "add ssl crt-list " + l, Payload: []byte(line)})
			}
		}
		for _, f := range slices.Sorted(maps.Keys(old)) {
			dels = append(dels, haproxy.Command{Line: "del ssl crt-list " + l + " " + f})
		}
	}
	if cmds := append(adds, dels...); len(cmds) > 0 {
		sent += len(cmds)
		ans, err := d.rt.ExecCommands(ctx, cmds)
		if err == nil {
			err = committed(cmds, ans)
		}
		if err != nil {
			return sent, err
		}
		for l, es := range w.lists {
			s.lists[l] = nil
			for _, e := range es {
				s.lists[l] = append(s.lists[l], e.Line())
			}
		}
	}
	if !prune {
		return sent, nil
	}

	var drops []haproxy.Command
	for _, p := range slices.Sorted(maps.Keys(s.files)) {
		if _, ok := w.files[p]; !ok {
			drops = append(drops, haproxy.Command{Line: "del ssl cert " + p})
			gone = append(gone, p)
		}
	}
	if len(drops) > 0 {
		sent += len(drops)
		if _, err := d.rt.ExecCommands(ctx, drops); err != nil {
			return sent, err
		}
		for _, p := range gone {
			delete(s.files, p)
		}
	}
	return sent, nil
}

// committed checks the answers HAProxy gives without a severity: a commit
// or an insertion into a crt-list says "Success!" when it worked.
func committed(cmds []haproxy.Command, ans []string) error {
	var errs []error
	for i, c := range cmds {
		if (strings.HasPrefix(c.Line, "commit ") || strings.HasPrefix(c.Line, "add ssl crt-list ")) &&
			!strings.Contains(ans[i], "Success!") {
			errs = append(errs, &haproxy.CommandError{Index: i, Command: c.Line, Answer: ans[i]})
		}
	}
	return errors.Join(errs...)
}

// abortCerts drops the transactions a failed step may have left open.
func (d *HAProxy) abortCerts(ctx context.Context, files []string) {
	cmds := make([]haproxy.Command, len(files))
	for i, p := range files {
		cmds[i] = haproxy.Command{Line: "abort ssl cert " + p}
	}
	_, _ = d.rt.ExecCommands(ctx, cmds) // "no transaction" for the committed ones
}

// entryFile is the certificate file of a crt-list line.
func entryFile(line string) string {
	f, _, _ := strings.Cut(line, " ")
	return f
}

// readCerts learns which certificate stores the worker holds and what its
// crt-lists of w hold; the contents are unknown, so every certificate of
// w is set again. Transactions left open are aborted.
func (d *HAProxy) readCerts(ctx context.Context, w certWant) error {
	lists := slices.Sorted(maps.Keys(w.lists))
	cmds := []haproxy.Command{{Line: "show ssl cert"}, {Line: "show ssl ca-file"}}
	for _, l := range lists {
		cmds = append(cmds, haproxy.Command{Line: "show ssl crt-list " + l})
	}
	ans, err := d.rt.ExecCommands(ctx, cmds)
	if err != nil {
		return err
	}
	s := certStore{known: true, pid: d.pid, files: map[string][sha256.Size]byte{}, lists: map[string][]string{}}
	dir := d.opts.Render.CertDir + "/"
	var pending []string
	for _, line := range strings.Split(ans[0], "\n") {
		line = strings.TrimSpace(line)
		if p, ok := strings.CutPrefix(line, "*"); ok && strings.HasPrefix(p, dir) {
			pending = append(pending, p)
		} else if strings.HasPrefix(line, dir) {
			s.files[line] = [sha256.Size]byte{}
		}
	}
	cas, openCAs := heldCAs(ans[1], dir) // cafiles.go
	s.cas = cas
	for i, l := range lists {
		for _, line := range strings.Split(ans[i+2], "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				s.lists[l] = append(s.lists[l], line)
			}
		}
	}
	if len(pending) > 0 {
		d.abortCerts(ctx, pending)
	}
	if len(openCAs) > 0 {
		d.abortCAs(ctx, openCAs)
	}
	s.disk = d.certs.disk
	d.certs = s
	return nil
}
