package haproxy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

func TestValidPayload(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Command
		ok   bool
	}{
		{"plain", Command{Line: "show info"}, true},
		{"lines", Command{Line: "set ssl cert /a.pem", Payload: []byte("a\nb\n")}, true},
		{"trailing newlines trimmed", Command{Line: "x", Payload: []byte("a\n\n\n")}, true},
		{"empty", Command{Line: "x", Payload: []byte("\n")}, false},
		{"an empty line inside", Command{Line: "x", Payload: []byte("a\n\nshow info\n")}, false},
		{"a leading empty line", Command{Line: "x", Payload: []byte("\na")}, false},
		{"CR", Command{Line: "x", Payload: []byte("a\r\nb")}, false},
		{"too large", Command{Line: "x", Payload: []byte(strings.Repeat("a", MaxPayload))}, false},
		{"its own <<", Command{Line: "x <<", Payload: []byte("a")}, false},
	} {
		if err := validPayload(tc.c); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if got := stripPayloadPrompts("+ + + [5]: Transaction created"); got != "[5]: Transaction created" {
		t.Errorf("stripPayloadPrompts = %q", got)
	}
}

// Payload commands pipelined with plain ones on a real HAProxy: one
// answer each, in order, the "+ " prompts gone, severities read; a bad
// payload is refused before anything is sent.
func TestExecCommandsPayload(t *testing.T) {
	dir := t.TempDir()
	_, pem := testcert.Files(t)
	body, err := os.ReadFile(pem)
	if err != nil {
		t.Fatal(err)
	}
	crt := filepath.Join(dir, "a.pem")
	if err := os.WriteFile(crt, body, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	conf := haproxytest.MinimalConfig(dir) + "\nfrontend tls\n\tbind 127.0.0.1:" + strconv.Itoa(haproxytest.FreePort(t)) +
		" ssl crt " + crt + "\n\ttimeout client 1s\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := haproxytest.Start(t, dir, cfg)
	r := NewRuntime(p.StatsSocket)
	t.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	ans, err := r.ExecCommands(ctx, []Command{{Line: "set ssl cert " + crt, Payload: body}, {Line: "show ssl cert"},
		{Line: "commit ssl cert " + crt}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ans[0], "Transaction created") || !strings.Contains(ans[1], "*"+crt) || !strings.Contains(ans[2], "Success!") {
		t.Fatalf("answers %q", ans)
	}
	// A refused payload: a CommandError for it, the next answered.
	ans, err = r.ExecCommands(ctx, []Command{{Line: "set ssl cert " + crt, Payload: []byte("not a certificate")}, {Line: "abort ssl cert " + crt}})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Index != 0 || len(ans) != 2 {
		t.Fatalf("bad payload: %q, %v", ans, err)
	}
	if _, err := r.ExecCommands(ctx, []Command{{Line: "set ssl cert " + crt, Payload: []byte("a\n\nshow info")}}); !errors.Is(err, ErrPayload) {
		t.Fatalf("an empty line in a payload: %v", err)
	}
}
