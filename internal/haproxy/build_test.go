package haproxy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// testdata/vv-*.txt: `haproxy -vv` of Debian bookworm's 2.6.12, trixie's
// 3.0.11 and experimental's 3.4.7, captured on this project's machine.
func TestBuildSupported(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	v26, v30, v34 := read("vv-2.6.txt"), read("vv-3.0.txt"), read("vv-3.4.txt")
	for _, tc := range []struct {
		name, out string
		version   string
		missing   []string // named in the refusal; nil: supported
		parseErr  bool
	}{
		{name: "2.6 (bookworm)", out: v26, version: "2.6.12-1+deb12u4"},
		{name: "3.0 (trixie)", out: v30, version: "3.0.11-1+deb13u4"},
		{name: "3.4 (experimental)", out: v34, version: "3.4.7-1"},
		{name: "3.4 without OpenSSL", out: strings.Replace(v34, " +OPENSSL ", " -OPENSSL ", 1),
			version: "3.4.7-1", missing: []string{"HAProxy 3.4.7-1", "without OPENSSL"}},
		{name: "2.4: too old", out: strings.Replace(v26, "version 2.6.12-1+deb12u4", "version 2.4.22-1", 1),
			version: "2.4.22-1", missing: []string{"HAProxy 2.4.22-1", "older than 2.6"}},
		{name: "no TPROXY", out: strings.Replace(v30, " +TPROXY ", " -TPROXY ", 1),
			version: "3.0.11-1+deb13u4", missing: []string{"HAProxy 3.0.11-1+deb13u4", "without TPROXY"}},
		{name: "no OpenSSL", out: strings.Replace(v26, " +OPENSSL ", " -OPENSSL ", 1),
			version: "2.6.12-1+deb12u4", missing: []string{"HAProxy 2.6.12-1+deb12u4", "without OPENSSL"}},
		{name: "1.8: old banner, no feature list", out: "HA-Proxy version 1.8.19-1+deb10u3 2020/08/01\nCopyright 2000-2019 Willy Tarreau\n",
			version: "1.8.19-1+deb10u3", missing: []string{"older than 2.6", "without TPROXY", "without OPENSSL"}},
		{name: "not haproxy", out: "usage: true\n", parseErr: true},
		{name: "bad version", out: "HAProxy version x.y\n", parseErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBuild(tc.out)
			if tc.parseErr {
				if !errors.Is(err, ErrCommand) {
					t.Fatalf("ParseBuild: %+v, %v; want ErrCommand", b, err)
				}
				return
			}
			if err != nil || b.Version.Text != tc.version {
				t.Fatalf("ParseBuild: version %q, %v; want %q", b.Version.Text, err, tc.version)
			}
			err = b.Supported()
			if tc.missing == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("%v, want ErrUnsupported", err)
			}
			for _, m := range tc.missing {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("refusal %q does not name %q", err, m)
				}
			}
		})
	}
}

// The binary the tests run (either version) is supported, and -vv names the
// version its master reports.
func TestInspectRealBinary(t *testing.T) {
	b, err := Inspect(testCtx(t), haproxytest.Bin())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Supported(); err != nil {
		t.Fatal(err)
	}
	l := startLB(t, "")
	if p, err := l.master.ShowProc(testCtx(t)); err != nil || p.Version != b.Version {
		t.Fatalf("-vv says %s, show proc %+v (%v)", b.Version, p.Version, err)
	}
	if _, err := Inspect(testCtx(t), filepath.Join(t.TempDir(), "no-haproxy")); err == nil || errors.Is(err, ErrUnsupported) {
		t.Fatalf("missing binary: %v", err)
	}
}
