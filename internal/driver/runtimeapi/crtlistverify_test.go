package runtimeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestCrtListLineVerifyAtRuntime records what HAProxy does with client
// certificate verification written on crt-list lines added at runtime
// (issue 34, branch mtls6; docs/gateway.md, "Verification per crt-list
// line"). No driver: a hand-written config, the Runtime API and TLS
// clients that say whether they were asked for a certificate.
//
// Three frontends, each a bind with a crt-list whose only line at start is
// its default certificate, a copy of the certificate added later for
// a.example (as render/tls.go writes it):
//
//   - fe1: the default line as the driver writes it today (no filter);
//   - fe2: the default line with the SNI filter `!*` (served only to
//     clients no other line matches);
//   - fe3: as fe2, the bind with `ca-ignore-err all crt-ignore-err all`;
//   - fe4: as fe2, with a rule refusing, after the handshake, a client
//     that presented no certificate when a map says its frontend
//     requires one (the clients of the default line, never asked).
//
// Then, with no reload: the certificate and a CA file created at runtime
// (`new ssl cert`, `new ssl ca-file`, set, commit), a line for a.example
// added with `[verify required ca-file F no-ca-names]`, replaced (del +
// add) with `verify optional`, with no verify, with required again, and F
// given another CA (`set ssl ca-file` + `commit ssl ca-file`).
func TestCrtListLineVerifyAtRuntime(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	srvCA, caA, caB := testcert.CA(t, "server CA"), testcert.CA(t, "client CA a"), testcert.CA(t, "client CA b")
	leaf := testcert.Issue(t, testcert.Spec{DNS: []string{"a.example"}}, srvCA)
	leafPEM := append(leaf.PEM(), leaf.KeyPEM(t)...)
	clients := map[string]*tls.Certificate{"none": nil, "a": testcert.ClientPair(t, caA, "client"), "b": testcert.ClientPair(t, caB, "client")}

	required := filepath.Join(dir, "clientauth.map")
	writeFile(t, required, nil)
	fes := []crtListFrontend{
		{name: "fe1", defaultPEM: leafPEM},
		{name: "fe2", defaultPEM: leafPEM, filter: " !*"},
		{name: "fe3", defaultPEM: leafPEM, filter: " !*", bind: " ca-ignore-err all crt-ignore-err all"},
		{name: "fe4", defaultPEM: leafPEM, filter: " !*", rules: "    tcp-request session reject if !{ ssl_c_used } { fe_name,map(" + required + ") -m str required }\n"},
	}
	lab := startCrtLists(t, dir, fes...)
	p, rt, addr := lab.p, lab.rt, lab.addr
	run := func(cmds ...haproxy.Command) {
		t.Helper()
		lab.exec(t, "runtime API", cmds...)
	}
	reloads := func() int {
		pr, err := haproxy.NewMaster(p.MasterSocket).ShowProc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return pr.Reloads
	}
	base := reloads()

	cert, caFile := filepath.Join(dir, "a.pem"), filepath.Join(dir, "cca.pem")
	run(append(sslNew("cert", cert, leafPEM), sslNew("ca-file", caFile, caA.PEM())...)...)
	// line replaces a.example's line on every frontend (del + add).
	added := false
	line := func(opts string) {
		t.Helper()
		for _, fe := range fes {
			var cmds []haproxy.Command
			if added {
				cmds = append(cmds, haproxy.Command{Line: "del ssl crt-list " + lab.list(fe.name) + " " + cert})
			}
			run(append(cmds, haproxy.Command{Line: "add ssl crt-list " + lab.list(fe.name), Payload: []byte(cert + opts + " a.example")})...)
		}
		added = true
	}

	// A case: which frontend, the SNI ("" none), the client's certificate.
	// Its outcome: "200" served, "refused" handshake or first read failed;
	// "+asked" when the client was asked for a certificate. Served is an
	// HTTP 200, or a node stand-in's name (a TCP frontend, tlsWorld).
	type outcome map[string]string // "fe sni client" -> outcome
	probe := func(fe, sni, client string) string { return tlsProbe(addr[fe], sni, clients[client]) }
	// want polls (a runtime change applies to new handshakes at once; the
	// deadline only bounds the wait) until every case has its outcome.
	want := func(step string, in outcome) {
		t.Helper()
		var last string
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			last = ""
			for c, w := range in {
				f := strings.SplitN(c, " ", 3)
				sni := strings.Trim(f[1], `"`)
				if got := probe(f[0], sni, f[2]); got != w {
					last += fmt.Sprintf("\n\t%s: got %s, want %s", c, got, w)
				}
			}
			if last == "" {
				return
			}
		}
		t.Fatalf("%s:%s", step, last)
	}
	// each is the same outcome on fe2 and fe3 for the three clients.
	each := func(o outcome, fe, sni string, none, a, b string) {
		o[fe+" "+sni+" none"], o[fe+" "+sni+" a"], o[fe+" "+sni+" b"] = none, a, b
	}

	// verify required on the line.
	line(" [verify required ca-file " + caFile + " no-ca-names]")
	o := outcome{}
	each(o, "fe1", "a.example", "200", "200", "200") // the default line's copy answers for its names first
	each(o, "fe2", "a.example", "refused+asked", "200+asked", "refused+asked")
	each(o, "fe3", "a.example", "refused+asked", "200+asked", "200+asked") // the bind's ignore-err lets b in
	each(o, "fe4", "a.example", "refused+asked", "200+asked", "refused+asked")
	for _, fe := range []string{"fe1", "fe2", "fe3", "fe4"} {
		each(o, fe, `""`, "200", "200", "200") // no SNI: the default line, nothing asked
		each(o, fe, "other.example", "200", "200", "200")
	}
	want("verify required", o)
	// The line reads back with its options (a restarted controller's view).
	ans, err := rt.Exec(ctx, []string{"show ssl crt-list " + filepath.Join(dir, "fe2.crtlist")})
	if err != nil || !strings.Contains(strings.Join(ans, ""), "verify required") {
		t.Errorf("show ssl crt-list: %q, %v; want the line's options", ans, err)
	}
	// fe4: the map says the frontend requires a certificate: the default
	// line's clients (no SNI, or a name no line has) are refused after
	// their handshake; the line's own verification is unchanged.
	run(haproxy.Command{Line: "add map " + required + " fe4 required"})
	o = outcome{}
	each(o, "fe4", `""`, "refused", "refused", "refused")
	each(o, "fe4", "other.example", "refused", "refused", "refused")
	each(o, "fe4", "a.example", "refused+asked", "200+asked", "refused+asked")
	each(o, "fe2", `""`, "200", "200", "200")
	want("fe4 required in the map", o)
	run(haproxy.Command{Line: "del map " + required + " fe4"})
	o = outcome{}
	each(o, "fe4", `""`, "200", "200", "200")
	want("fe4 out of the map", o)

	line(" [verify optional ca-file " + caFile + " no-ca-names]")
	o = outcome{}
	each(o, "fe2", "a.example", "200+asked", "200+asked", "refused+asked")
	each(o, "fe3", "a.example", "200+asked", "200+asked", "200+asked")
	each(o, "fe2", `""`, "200", "200", "200")
	want("verify optional", o)

	line("")
	o = outcome{}
	each(o, "fe2", "a.example", "200", "200", "200")
	each(o, "fe3", "a.example", "200", "200", "200")
	want("no verify", o)

	line(" [verify required ca-file " + caFile + " no-ca-names]")
	run(sslSet("ca-file", caFile, caB.PEM())...)
	o = outcome{}
	each(o, "fe2", "a.example", "refused+asked", "refused+asked", "200+asked")
	want("CA b committed", o)

	// The default line cannot be taken out (nor so replaced) at runtime.
	ans, err = rt.Exec(ctx, []string{"del ssl crt-list " + filepath.Join(dir, "fe2.crtlist") + " " + filepath.Join(dir, "fe2.default.pem")})
	if err != nil || len(ans) != 1 || !strings.Contains(ans[0], "cannot be deleted") {
		t.Errorf("del of the default line: %q, %v; want it refused", ans, err)
	}
	if n := reloads(); n != base {
		t.Errorf("%d reloads, want 0", n-base)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsProbe sends one request to addr naming sni ("" none) with the
// client certificate cert (nil: none when asked) and says what happened:
// "200" served, "refused" the handshake or the answer failed, and
// "+asked" when the client was asked for a certificate. Served is an
// HTTP 200, or a node stand-in's name (a TCP frontend, tlsWorld).
func tlsProbe(addr, sni string, cert *tls.Certificate) string {
	res, _ := servedProbe(addr, sni, cert) // fecacommit_test.go
	return res
}
