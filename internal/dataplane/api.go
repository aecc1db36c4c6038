package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Object is one configuration object as the API sends it: decoded JSON
// with numbers as json.Number, so that writing it back changes nothing.
type Object = map[string]any

// Paths of the endpoints used, relative to /v3.
const (
	ConfigPath       = "/services/haproxy/configuration"
	BackendsPath     = ConfigPath + "/backends"
	FrontendsPath    = ConfigPath + "/frontends"
	VersionPath      = ConfigPath + "/version"
	TransactionsPath = "/services/haproxy/transactions"
	ReloadsPath      = "/services/haproxy/reloads"
	RuntimePath      = "/services/haproxy/runtime"
)

// BackendPath is the path of one backend.
func BackendPath(name string) string { return BackendsPath + "/" + url.PathEscape(name) }

// FrontendPath is the path of one frontend.
func FrontendPath(name string) string { return FrontendsPath + "/" + url.PathEscape(name) }

// ServersPath is the path of a backend's servers; ServerPath of one.
func ServersPath(backend string) string { return BackendPath(backend) + "/servers" }

// ServerPath is the path of one server of a backend.
func ServerPath(backend, server string) string {
	return ServersPath(backend) + "/" + url.PathEscape(server)
}

// ServerTemplatesPath is the path of a backend's server templates.
func ServerTemplatesPath(backend string) string { return BackendPath(backend) + "/server_templates" }

// HTTPChecksPath is a backend's http-check rules, read and replaced as
// one list (a GET of the backend shows them only with full_section).
func HTTPChecksPath(backend string) string { return BackendPath(backend) + "/http_checks" }

// BindsPath is the path of a frontend's binds.
func BindsPath(frontend string) string { return FrontendPath(frontend) + "/binds" }

// BindPath is the path of one bind of a frontend.
func BindPath(frontend, bind string) string { return BindsPath(frontend) + "/" + url.PathEscape(bind) }

// RuntimeServerPath is the runtime (no reload, not persisted) path of a server.
func RuntimeServerPath(backend, server string) string {
	return RuntimePath + "/backends/" + url.PathEscape(backend) + "/servers/" + url.PathEscape(server)
}

// Write says how a change is made: inside transaction TxID, or outside
// any transaction against configuration Version.
type Write struct {
	TxID    string
	Version int64
	// Full writes a section with its children (full_section=true): a
	// section's object then carries them, keyed by name ("servers",
	// "binds"), and they replace the section's.
	Full bool
}

func (w Write) query() url.Values {
	q := url.Values{}
	if w.Full {
		q.Set("full_section", "true")
	}
	if w.TxID != "" {
		q.Set("transaction_id", w.TxID)
	} else {
		q.Set("version", strconv.FormatInt(w.Version, 10))
	}
	return q
}

func readQuery(tx string) url.Values {
	if tx == "" {
		return nil
	}
	return url.Values{"transaction_id": {tx}}
}

// Version reads the configuration version.
func (c *Client) Version(ctx context.Context) (int64, error) {
	var v json.Number
	if _, err := c.Do(ctx, http.MethodGet, VersionPath, nil, nil, &v); err != nil {
		return 0, err
	}
	n, err := v.Int64()
	if err != nil {
		return 0, fmt.Errorf("dataplane: version %q: %w", v, err)
	}
	return n, nil
}

// List reads a collection (inside transaction tx when not empty). The API
// sends null for an empty one.
func (c *Client) List(ctx context.Context, path, tx string) ([]Object, Response, error) {
	var out []Object
	r, err := c.Do(ctx, http.MethodGet, path, readQuery(tx), nil, &out)
	return out, r, err
}

// Get reads one object.
func (c *Client) Get(ctx context.Context, path, tx string) (Object, Response, error) {
	var out Object
	r, err := c.Do(ctx, http.MethodGet, path, readQuery(tx), nil, &out)
	return out, r, err
}

// Create posts obj to the collection at path.
func (c *Client) Create(ctx context.Context, path string, obj Object, w Write) (Response, error) {
	return c.Do(ctx, http.MethodPost, path, w.query(), obj, nil)
}

// Replace puts obj, whole, at path.
func (c *Client) Replace(ctx context.Context, path string, obj Object, w Write) (Response, error) {
	return c.Do(ctx, http.MethodPut, path, w.query(), obj, nil)
}

// ReplaceList puts list, whole, at path: a rule list such as
// HTTPChecksPath ([] removes every rule).
func (c *Client) ReplaceList(ctx context.Context, path string, list []any, w Write) (Response, error) {
	if list == nil {
		list = []any{}
	}
	return c.Do(ctx, http.MethodPut, path, w.query(), list, nil)
}

// Delete deletes the object at path.
func (c *Client) Delete(ctx context.Context, path string, w Write) (Response, error) {
	return c.Do(ctx, http.MethodDelete, path, w.query(), nil, nil)
}

// Transaction is a configuration transaction.
type Transaction struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Version int64  `json:"_version"`
}

// OpenTx opens a transaction on configuration version.
func (c *Client) OpenTx(ctx context.Context, version int64) (Transaction, error) {
	var t Transaction
	_, err := c.Do(ctx, http.MethodPost, TransactionsPath, url.Values{"version": {strconv.FormatInt(version, 10)}}, nil, &t)
	if err == nil && t.ID == "" {
		err = errors.New("dataplane: the API opened a transaction without an id")
	}
	return t, err
}

// CommitTx commits a transaction; the answer carries the reload id.
func (c *Client) CommitTx(ctx context.Context, id string) (Transaction, Response, error) {
	var t Transaction
	r, err := c.Do(ctx, http.MethodPut, TransactionsPath+"/"+url.PathEscape(id), nil, nil, &t)
	return t, r, err
}

// DeleteTx deletes (aborts) a transaction.
func (c *Client) DeleteTx(ctx context.Context, id string) error {
	_, err := c.Do(ctx, http.MethodDelete, TransactionsPath+"/"+url.PathEscape(id), nil, nil, nil)
	return err
}

// Transactions lists the transactions (all statuses).
func (c *Client) Transactions(ctx context.Context) ([]Transaction, error) {
	var out []Transaction
	_, err := c.Do(ctx, http.MethodGet, TransactionsPath, nil, nil, &out)
	return out, err
}

// Reload is one reload of HAProxy by the API.
type Reload struct {
	ID        string `json:"id"`
	Status    string `json:"status"` // in_progress, succeeded, failed
	Response  string `json:"response"`
	Timestamp int64  `json:"reload_timestamp"`
}

// Reload statuses.
const (
	ReloadInProgress = "in_progress"
	ReloadSucceeded  = "succeeded"
	ReloadFailed     = "failed"
)

// GetReload reads one reload.
func (c *Client) GetReload(ctx context.Context, id string) (Reload, error) {
	var r Reload
	_, err := c.Do(ctx, http.MethodGet, ReloadsPath+"/"+url.PathEscape(id), nil, nil, &r)
	return r, err
}

// Reloads lists the reloads the API knows of.
func (c *Client) Reloads(ctx context.Context) ([]Reload, error) {
	var out []Reload
	_, err := c.Do(ctx, http.MethodGet, ReloadsPath, nil, nil, &out)
	return out, err
}

// WaitReload polls reload id every poll until it succeeded (nil), failed
// (a *ReloadError) or ctx ends.
func (c *Client) WaitReload(ctx context.Context, id string, poll time.Duration) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("dataplane: waiting for reload %s: %w", id, ctx.Err())
		case <-t.C:
		}
		r, err := c.GetReload(ctx, id)
		if err != nil {
			return err
		}
		switch r.Status {
		case ReloadSucceeded:
			return nil
		case ReloadFailed:
			return &ReloadError{ID: id, Response: r.Response}
		}
		t.Reset(poll)
	}
}

// SetRuntimeState sets a server's admin state (ready, drain, maint)
// through the runtime endpoint: no reload, not written to haproxy.cfg, and
// undone by the next reload.
func (c *Client) SetRuntimeState(ctx context.Context, backend, server, state string) error {
	_, err := c.Do(ctx, http.MethodPut, RuntimeServerPath(backend, server), nil, Object{"admin_state": state}, nil)
	return err
}

// WorkerPID reads the process id of HAProxy's worker (runtime info): it
// changes when HAProxy reloads or restarts, and with it every runtime
// change is gone.
func (c *Client) WorkerPID(ctx context.Context) (int64, error) {
	var out struct {
		Info struct {
			PID json.Number `json:"pid"`
		} `json:"info"`
	}
	if _, err := c.Do(ctx, http.MethodGet, RuntimePath+"/info", nil, nil, &out); err != nil {
		return 0, err
	}
	pid, err := out.Info.PID.Int64()
	if err != nil {
		return 0, fmt.Errorf("dataplane: runtime info: pid %q: %w", out.Info.PID, err)
	}
	return pid, nil
}

// SetRuntimeServer changes a server at runtime: any of admin_state,
// address and port (the API sets the admin state first). No reload, not
// written to haproxy.cfg, and undone by the next reload.
func (c *Client) SetRuntimeServer(ctx context.Context, backend, server string, body Object) error {
	_, err := c.Do(ctx, http.MethodPut, RuntimeServerPath(backend, server), nil, body, nil)
	return err
}

// RuntimeServers reads the runtime state of a backend's servers.
func (c *Client) RuntimeServers(ctx context.Context, backend string) ([]Object, error) {
	var out []Object
	_, err := c.Do(ctx, http.MethodGet, RuntimePath+"/backends/"+url.PathEscape(backend)+"/servers", nil, nil, &out)
	return out, err
}

// RawPath is the whole haproxy.cfg as text.
const RawPath = ConfigPath + "/raw"

// RawConfig reads the whole configuration as text, and its version.
func (c *Client) RawConfig(ctx context.Context) (string, int64, error) {
	data, r, err := c.doText(ctx, http.MethodGet, RawPath, nil, nil)
	if err != nil {
		return "", 0, err
	}
	if r.Version == 0 {
		return "", 0, errors.New("dataplane: the raw configuration came without a Configuration-Version")
	}
	return string(data), r.Version, nil
}

// PostRaw replaces the whole configuration with text, against version.
// With skipReload the API only writes it (201, nothing reloads: what
// HAProxy runs is unchanged until the next reload); otherwise it reloads
// (202 and a Reload-Id). One write whatever the size: the API parses and
// validates the whole haproxy.cfg at every versioned write anyway.
func (c *Client) PostRaw(ctx context.Context, text string, version int64, skipReload bool) (Response, error) {
	q := url.Values{"version": {strconv.FormatInt(version, 10)}}
	if skipReload {
		q.Set("skip_reload", "true")
	}
	_, r, err := c.doText(ctx, http.MethodPost, RawPath, q, []byte(text))
	return r, err
}
