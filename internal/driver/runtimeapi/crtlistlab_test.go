package runtimeapi

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// crtListFrontend is one TLS frontend of a hand-written config whose
// bind reads a crt-list (crtlistverify_test.go, fecacommit_test.go): at
// start the list holds one line, its default certificate (defaultPEM)
// with filter (e.g. " !*"); bind is more of the bind's options, rules
// come before the frontend's answer, a 200.
type crtListFrontend struct {
	name         string
	defaultPEM   []byte
	filter, bind string
	rules        string
}

// crtListLab is a real HAProxy serving such frontends, no driver: the
// tests change their lines, certificates and CA files through the
// Runtime API.
type crtListLab struct {
	dir  string
	addr map[string]string // frontend -> 127.0.0.1:PORT
	p    *haproxytest.Process
	rt   *haproxy.Runtime
}

// startCrtLists writes the config of fes in dir and starts HAProxy.
func startCrtLists(t *testing.T, dir string, fes ...crtListFrontend) *crtListLab {
	t.Helper()
	l := &crtListLab{dir: dir, addr: map[string]string{}}
	cfg := haproxytest.MinimalConfig(dir)
	for _, fe := range fes {
		def := filepath.Join(dir, fe.name+".default.pem")
		writeFile(t, def, fe.defaultPEM)
		writeFile(t, l.list(fe.name), []byte(def+fe.filter+"\n"))
		l.addr[fe.name] = fmt.Sprintf("127.0.0.1:%d", haproxytest.FreePort(t))
		cfg += fmt.Sprintf("\nfrontend %s\n    mode http\n    bind %s ssl crt-list %s%s\n%s    http-request return status 200 content-type text/plain string ok\n",
			fe.name, l.addr[fe.name], l.list(fe.name), fe.bind, fe.rules)
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	writeFile(t, cfgPath, []byte(cfg))
	l.p = haproxytest.Start(t, dir, cfgPath)
	l.rt = haproxy.NewRuntime(l.p.StatsSocket)
	t.Cleanup(func() { _ = l.rt.Close() })
	return l
}

// list is frontend fe's crt-list.
func (l *crtListLab) list(fe string) string { return filepath.Join(l.dir, fe+".crtlist") }

// exec runs cmds in one batch and fails t, naming step, on an error or an
// answer that reports one.
func (l *crtListLab) exec(t *testing.T, step string, cmds ...haproxy.Command) {
	t.Helper()
	ans, err := l.rt.ExecCommands(context.Background(), cmds)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	for i, a := range ans {
		if strings.Contains(strings.ToLower(a), "error") || strings.Contains(a, "Can't") || strings.Contains(a, "failed") {
			t.Fatalf("%s: %q answered %q", step, cmds[i].Line, a)
		}
	}
}

// sslNew are the commands creating an SSL object at runtime, kind "cert"
// or "ca-file", at path with pem (new, then sslSet).
func sslNew(kind, path string, pem []byte) []haproxy.Command {
	return append([]haproxy.Command{{Line: "new ssl " + kind + " " + path}}, sslSet(kind, path, pem)...)
}

// sslSet are the commands replacing an SSL object's contents (set, commit).
func sslSet(kind, path string, pem []byte) []haproxy.Command {
	return []haproxy.Command{{Line: "set ssl " + kind + " " + path, Payload: pem}, {Line: "commit ssl " + kind + " " + path}}
}
