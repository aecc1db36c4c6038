package apiserverlb

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

func TestState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "apiservers.json")
	if c, err := LoadState(path); err != nil || len(c.Servers) != 0 {
		t.Fatalf("missing file: %+v, %v; want empty", c, err)
	}
	want := Choice{Source: SourceNodes, Servers: aps("192.0.2.1:6443", "[2001:db8::1]:6443")}
	if err := SaveState(path, want, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadState(path); err != nil || !sameChoice(got, want) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, want)
	}
	for name, content := range map[string]string{
		"not JSON":       "192.0.2.1:6443\n",
		"bad server":     `{"source":"static","servers":["192.0.2.1:6443 backup"]}`,
		"host name":      `{"source":"static","servers":["cp-1:6443"]}`,
		"without port":   `{"source":"static","servers":["192.0.2.1"]}`,
		"unspecified ip": `{"source":"static","servers":["0.0.0.0:6443"]}`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := LoadState(p); err == nil {
			t.Errorf("%s: loaded %+v, want an error", name, c)
		}
	}
}

func TestWriteClientPEM(t *testing.T) {
	ca, both := testcert.Files(t)
	dest := filepath.Join(t.TempDir(), "client.pem")
	// both.pem holds certificate and key: as certificate and as key file.
	if err := WriteClientPEM(both, both, dest); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dest)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v, %v; want mode 0600", st, err)
	}
	b, _ := os.ReadFile(dest)
	if !slices.Contains(strings.Split(string(b), "\n"), "-----BEGIN EC PRIVATE KEY-----") {
		t.Errorf("no key in the joined file")
	}
	// A certificate without its key is refused, and nothing is written.
	other := filepath.Join(t.TempDir(), "other.pem")
	if err := WriteClientPEM(ca, ca, other); !errors.Is(err, ErrInvalid) {
		t.Errorf("certificate without key: %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(other); err == nil {
		t.Errorf("a file was written for an invalid pair")
	}
}
