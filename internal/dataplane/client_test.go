package dataplane

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		status int
		msg    string
		want   error
	}{
		{409, "version mismatch: version in configuration file is 5, given version is 4", ErrVersionMismatch},
		{409, "version mismatch, transaction version: 5, configured version: 6", ErrVersionMismatch}, // a commit overtaken by a write outside
		{409, "server s1 already exists in be", ErrExists},
		{406, "transaction outdated", ErrOutdated},
		{404, "backend x not found", ErrNotFound},
		{400, "validation error: ...", ErrValidation},
		{422, "port in body should be less than or equal to 65535", ErrSchema},
		{429, "too many", ErrTooManyTransactions},
		{401, "unauthenticated", ErrUnauthorized},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(`{"code":1,"message":"` + tc.msg + `"}`))
		}))
		c, err := New(Options{URL: srv.URL, Username: "admin", Password: "pw-not-in-errors"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Version(context.Background())
		srv.Close()
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "pw-not-in-errors") {
			t.Errorf("%d %q: %v, want %v with the message and no password", tc.status, tc.msg, err, tc.want)
		}
		for _, other := range []error{ErrVersionMismatch, ErrExists, ErrOutdated, ErrNotFound, ErrValidation, ErrSchema, ErrTooManyTransactions, ErrUnauthorized} {
			if other != tc.want && errors.Is(err, other) {
				t.Errorf("%d %q is also %v", tc.status, tc.msg, other)
			}
		}
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		err  string
	}{
		{"credentials in the URL", Options{URL: "http://admin:hunter2@h:5555"}, "must not carry credentials"},
		{"not a URL", Options{URL: "h:5555"}, "want http(s)"},
		{"both", Options{URL: "http://h", Username: "a", Password: "b", Token: "t"}, "not both"},
		{"user without password", Options{URL: "http://h", Username: "a"}, "both a username and a password"},
		{"CA file over http", Options{URL: "http://h", CAFile: "/x"}, "needs an https URL"},
	} {
		_, err := New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestTLSAndBearer(t *testing.T) {
	var auth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		_, _ = w.Write([]byte("7"))
	}))
	defer srv.Close()
	// Without the CA: refused.
	c, err := New(Options{URL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(context.Background()); err == nil {
		t.Error("an unknown certificate was accepted")
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = New(Options{URL: srv.URL + "/v3/", Token: "tok", CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Version(context.Background()); err != nil || v != 7 || auth != "Bearer tok" {
		t.Errorf("with the CA: %d %v, auth %q", v, err, auth)
	}
	var log bytes.Buffer
	c, err = New(Options{URL: srv.URL, InsecureSkipVerify: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(context.Background()); err != nil || !strings.Contains(log.String(), "level=WARN") {
		t.Errorf("insecure: %v, log %q", err, log.String())
	}
}

// A failed reload carries what the API's reload command printed (HAProxy's
// message when the command passes it on), and says where to look when it
// printed nothing.
func TestReloadError(t *testing.T) {
	for _, tc := range []struct{ response, want string }{
		{"[ALERT] cannot bind socket (Address already in use) [127.0.0.1:80]\n", "cannot bind socket"},
		{"", "HAProxy's log"},
	} {
		err := error(&ReloadError{ID: "2026-11-24-3", Response: tc.response})
		if !errors.Is(err, ErrReloadFailed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrReloadFailed with %q", tc.response, err, tc.want)
		}
	}
}
