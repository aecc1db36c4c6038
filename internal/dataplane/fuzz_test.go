package dataplane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// answer is a RoundTripper that answers every request with one status,
// body and Configuration-Version header.
type answer struct {
	status  int
	body    []byte
	version string
}

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Configuration-Version", a.version)
	h.Set("Reload-Id", "2026-11-24-1")
	return &http.Response{StatusCode: a.status, Header: h, Body: io.NopCloser(bytes.NewReader(a.body))}, nil
}

// FuzzResponses feeds one answer of the Data Plane API to the client's
// readers of it (a list of objects, a transaction, a reload, the
// version): none may panic; an error status is always an *APIError
// whose message is bounded; a success decodes or says it could not.
func FuzzResponses(f *testing.F) {
	for _, s := range []struct {
		status  int
		body    string
		version string
	}{
		{200, `[{"name":"s1","address":"192.0.2.1","port":80}]`, "7"},
		{202, `{"_version":8,"id":"abc","status":"success"}`, "8"},
		{200, `{"id":"2026-11-24-1","status":"failed","response":"[ALERT] bind","reload_timestamp":1}`, ""},
		{409, `{"code":409,"message":"version mismatch"}`, "x"},
		{409, `{"code":409,"message":"object exists"}`, "1"},
		{400, `validation error: ` + strings.Repeat("x", 300), ""},
		{200, `{"a":`, "99999999999999999999"},
		{500, ``, "-1"},
		{200, `12345678901234567890123`, ""},
	} {
		f.Add(s.status, []byte(s.body), s.version)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, version string) {
		if status < 100 || status > 999 {
			return // net/http would not deliver it
		}
		c, err := New(Options{URL: "http://192.0.2.1:5555", Transport: answer{status, body, version}, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		check := func(what string, err error) {
			var ae *APIError
			switch {
			case status >= 300 && !errors.As(err, &ae):
				t.Fatalf("%s: status %d: error %v is no *APIError", what, status, err)
			case ae != nil && len(ae.Message) > 203 && !strings.HasPrefix(strings.TrimSpace(string(body)), "{"):
				t.Fatalf("%s: message of %d bytes from a raw body", what, len(ae.Message))
			}
		}
		_, _, err = c.List(ctx, "/services/haproxy/configuration/backends", "")
		check("List", err)
		_, err = c.OpenTx(ctx, 1)
		check("OpenTx", err)
		_, err = c.GetReload(ctx, "2026-11-24-1")
		check("GetReload", err)
		_, err = c.Version(ctx)
		check("Version", err)
	})
}
