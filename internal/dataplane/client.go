// Package dataplane is a small client of the HAProxy Data Plane API v3: the
// few configuration, transaction, reload and runtime endpoints the Data
// Plane API driver uses. Objects travel as Object (decoded JSON, numbers
// kept exact) so that a section read can be written back whole, with every
// field the client does not know about. Errors are classified here
// (errors.Is with the Err* variables); credentials never appear in errors
// or logs.
package dataplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Options configure a Client.
type Options struct {
	URL string // base URL, e.g. http://haproxy:5555 (a trailing /v3 is accepted)
	// Basic auth, or a bearer token; at most one of the two.
	Username, Password string
	Token              string
	CAFile             string // PEM bundle that signs the API's certificate
	InsecureSkipVerify bool   // do not verify the API's certificate (logged as a warning)
	Timeout            time.Duration
	Logger             *slog.Logger
	// Transport, when set, sends the requests (tests wrap the default
	// one); TLS settings above then do not apply.
	Transport http.RoundTripper
}

// Client talks to one Data Plane API.
type Client struct {
	base string
	auth func(*http.Request)
	http *http.Client
	log  *slog.Logger
}

// New checks opts and returns a client. It makes no request.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("dataplane: URL %q: want http(s)://host[:port]", redactURL(opts.URL))
	}
	if u.User != nil {
		return nil, errors.New("dataplane: the URL must not carry credentials: use the username and password (or token) settings")
	}
	if opts.Token != "" && (opts.Username != "" || opts.Password != "") {
		return nil, errors.New("dataplane: give either a username and password or a token, not both")
	}
	if (opts.Username == "") != (opts.Password == "") {
		return nil, errors.New("dataplane: basic auth needs both a username and a password")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	if u.Scheme == "https" {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if opts.CAFile != "" {
			pem, err := os.ReadFile(opts.CAFile)
			if err != nil {
				return nil, fmt.Errorf("dataplane: CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("dataplane: CA file %s: no PEM certificate in it", opts.CAFile)
			}
			tr.TLSClientConfig.RootCAs = pool
		}
		if opts.InsecureSkipVerify {
			tr.TLSClientConfig.InsecureSkipVerify = true
			log.Warn("Data Plane API certificate NOT verified (insecure-skip-verify): anyone on the path can read the credentials and change HAProxy")
		}
	} else if opts.CAFile != "" || opts.InsecureSkipVerify {
		return nil, errors.New("dataplane: a CA file or insecure-skip-verify needs an https URL")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var rt http.RoundTripper = tr
	if opts.Transport != nil {
		rt = opts.Transport
	}
	c := &Client{
		base: strings.TrimSuffix(strings.TrimSuffix(u.String(), "/"), "/v3") + "/v3",
		http: &http.Client{Transport: rt, Timeout: timeout},
		log:  log,
		auth: func(*http.Request) {},
	}
	switch {
	case opts.Token != "":
		tok := "Bearer " + opts.Token
		c.auth = func(r *http.Request) { r.Header.Set("Authorization", tok) }
	case opts.Username != "":
		user, pass := opts.Username, opts.Password
		c.auth = func(r *http.Request) { r.SetBasicAuth(user, pass) }
	}
	return c, nil
}

// redactURL drops any userinfo from a URL for messages.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// Response is what a request returned besides its body.
type Response struct {
	Status   int
	Version  int64  // Configuration-Version header; 0 when absent
	ReloadID string // Reload-Id header; "" when absent
}

// doText sends one request whose body and answer are plain text (the raw
// configuration); errors as Do.
func (c *Client) doText(ctx context.Context, method, path string, query url.Values, body []byte) ([]byte, Response, error) {
	return c.send(ctx, method, path, query, body, "text/plain")
}

// Do sends one request. path starts with "/" and is relative to /v3; body,
// when not nil, is sent as JSON; out, when not nil, receives the JSON
// answer. A status of 300 or more is an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) (Response, error) {
	var raw []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Response{}, fmt.Errorf("dataplane: %s %s: %w", method, path, err)
		}
		raw = b
	}
	data, r, err := c.send(ctx, method, path, query, raw, "application/json")
	if err != nil {
		return r, err
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			return r, fmt.Errorf("dataplane: %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return r, nil
}

// send sends one request with body (nil: none) of the given content type
// and returns the answer's body; a status of 300 or more is an *APIError.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body []byte, ctype string) ([]byte, Response, error) {
	return c.sendAs(ctx, method, path, query, body, ctype, ctype)
}

// sendAs is send with an Accept header of its own (files: storage.go).
func (c *Client) sendAs(ctx context.Context, method, path string, query url.Values, body []byte, ctype, accept string) ([]byte, Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, Response{}, fmt.Errorf("dataplane: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", accept)
	c.auth(req)
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in our message already, without the query
		}
		return nil, Response{}, fmt.Errorf("dataplane: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	r := Response{Status: resp.StatusCode, ReloadID: resp.Header.Get("Reload-Id")}
	if v := resp.Header.Get("Configuration-Version"); v != "" {
		fmt.Sscan(v, &r.Version)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, r, fmt.Errorf("dataplane: %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Method: method, Path: path, Status: resp.StatusCode}
		var eb struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &eb) == nil && eb.Message != "" {
			ae.Code, ae.Message = eb.Code, eb.Message
		} else {
			ae.Message = strings.TrimSpace(string(data))
			if len(ae.Message) > 200 {
				ae.Message = ae.Message[:200] + "..."
			}
		}
		return nil, r, ae
	}
	return data, r, nil
}
