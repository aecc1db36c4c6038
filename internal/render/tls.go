package render

import (
	"bytes"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TLS termination (model.TLS, with Options.CertDir): a terminating
// frontend's binds read its certificates from one crt-list file of its
// own, so the config names the file only and the certificates are data
// the driver changes through the Runtime API (`new/set/commit ssl cert`,
// `add/del ssl crt-list`) with no reload. The crt-list's first line is
// the frontend's default certificate, a file of the frontend's own
// (DefaultCertFile) holding a copy of the model's Default: HAProxy never
// removes a bind's default entry at runtime, but it does replace a
// certificate's contents, so another Secret becoming the default is a
// `set ssl cert` on that file too. Then one line per certificate, with its
// server names as SNI filters, and with client verification on the lines
// its sslbindconf (clientauth.go). No strict-sni: a client naming no
// known host gets the default certificate. The default line has the
// filter `!*`: its certificate's names are served by that certificate's
// own line, with that line's options (without it the default line
// answers for them: measured, docs/gateway.md).

// CrtListFile is frontend fe's crt-list under dir.
func CrtListFile(dir, fe string) string { return dir + "/" + fe + ".crtlist" }

// CertFile is certificate name's file under dir (a name has no dot).
func CertFile(dir, name string) string { return dir + "/" + name + ".pem" }

// DefaultCertFile is the file of frontend fe's default certificate.
func DefaultCertFile(dir, fe string) string { return dir + "/" + fe + ".default.pem" }

// CrtListEntry is one line of a crt-list: a certificate file and the
// server names it is served for (none: the names it carries).
type CrtListEntry struct {
	File string
	Opts string // sslbindconf, in the order HAProxy prints it back
	SNI  []string
}

// Line is the entry as a crt-list line (and an `add ssl crt-list`
// payload).
func (e CrtListEntry) Line() string {
	line := e.File
	if e.Opts != "" {
		line += " [" + e.Opts + "]"
	}
	if len(e.SNI) == 0 {
		return line
	}
	return line + " " + strings.Join(e.SNI, " ")
}

// CrtListEntries are the lines of f's crt-list under opts.CertDir: the
// default certificate's file first (`!*`), then each certificate with a
// valid name, in order, with the client verification (clientauth.go). Filters model.ValidSNI refuses are left out; a certificate left
// with none is left out too (it would otherwise answer for every name
// it carries, which the producer did not ask for).
func CrtListEntries(opts Options, f model.Frontend) []CrtListEntry {
	if f.TLS == nil {
		return nil
	}
	dir := opts.CertDir
	out := []CrtListEntry{{File: DefaultCertFile(dir, f.Name), SNI: []string{"!*"}}}
	verify := clientAuthLine(f.TLS, opts)
	for _, c := range f.TLS.Certificates {
		if !model.ValidCertName(c.Name) {
			continue
		}
		e := CrtListEntry{File: CertFile(dir, c.Name), Opts: verify}
		if c.Client != nil {
			var ok bool // hostauth.go: the host's, over the frontend's; a line that cannot verify is left out
			if e.Opts, ok = certClientAuthLine(c.Client, opts); !ok {
				continue
			}
		}
		for _, s := range c.SNI {
			if model.ValidSNI(s) {
				e.SNI = append(e.SNI, s)
			}
		}
		if len(c.SNI) > 0 && len(e.SNI) == 0 {
			continue
		}
		out = append(out, e)
	}
	return out
}

// CrtListContent is what f's crt-list under opts.CertDir holds.
func CrtListContent(opts Options, f model.Frontend) []byte {
	var b bytes.Buffer
	for _, e := range CrtListEntries(opts, f) {
		b.WriteString(e.Line())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// tlsBind is what a bind line of f carries after its address: nothing
// for a frontend that does not terminate TLS, else the crt-list and the
// protocols offered. ok is false when f terminates TLS but there is no
// certificate directory (or its name is not one HAProxy reads whole):
// the frontend then gets no bind rather than a plain one.
func tlsBind(f model.Frontend, opts Options) (args string, ok bool) {
	if f.TLS == nil {
		return "", true
	}
	if opts.CertDir == "" || !model.ValidFilePath(opts.CertDir) || !model.ValidFilePath(CrtListFile(opts.CertDir, f.Name)) {
		return "", false
	}
	args = " ssl crt-list " + CrtListFile(opts.CertDir, f.Name)
	client, ok := clientAuthBind(f.TLS, opts) // clientauth.go
	if !ok {
		return "", false
	}
	args += client
	var alpn []string
	for _, p := range f.TLS.ALPN {
		if model.ValidALPN([]string{p}) {
			alpn = append(alpn, p)
		}
	}
	if len(alpn) > 0 {
		args += " alpn " + strings.Join(alpn, ",")
	}
	return args, true
}
