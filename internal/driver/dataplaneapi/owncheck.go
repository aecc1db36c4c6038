package dataplaneapi

import (
	"errors"
	"fmt"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A Service backend's own check (model.Backend.Check), written as the
// HAProxy driver renders it (internal/render): default-server check inter
// .. rise .. fall .. port P, and for an HTTP check option httpchk GET PATH
// with http-check expect status 200. Port and path come from the model:
// the Service's healthCheckNodePort and "/" with
// --local-check=health-check-node-port, the node check where servers
// carry it themselves. In the API's objects: default_server's check,
// inter, rise, fall and health_check_port (the keyword port), and the
// backend's adv_check, httpchk_params and http_check_list, as the real API
// v3.4.0 reads them back (TestContractOwnCheck).

// ownCheck sets in default-server ds the check keywords of c (none when c
// is off), and the PROXY protocol: check-send-proxy only for a check of
// the server's own port (a check of another port, such as kube-proxy's
// health port, is not of the service that reads the PROXY header).
func ownCheck(ds map[string]any, c model.Check, proxyV2 bool) {
	checkFields(ds, c, true)
	setOrDelete(ds, "send-proxy-v2", "enabled", proxyV2)
	setOrDelete(ds, "check-send-proxy", "enabled", proxyV2 && c.Enabled && c.Port == 0)
}

// backendCheck sets the kind of check of a Service backend: its own
// check's, else (every-Service mode) the node check its unbound slots
// carry (loose). An HTTP check is option httpchk (httpCheck); otherwise
// the driver's own sections have no adv_check (a TCP connect), and the
// operator's backend of the single-Service mode option tcp-check, as the
// older controller wrote it: there the driver owns adv_check and
// httpchk_params, and the http-check rules while its check is an HTTP
// one (read and written as a list: state.read, diff).
func (d *Driver) backendCheck(base Object, own, loose model.Check) {
	c := loose
	if own.Enabled {
		c = own
	}
	if d.opts.Seed != "" {
		c = own
	}
	if c.Enabled && c.HTTP.Path != "" {
		httpCheck(base, c)
		return
	}
	delete(base, "httpchk_params") // the API keeps none without option httpchk
	if d.opts.Seed != "" {
		// The operator's http-check rules, which tcp-check does not
		// read, stay as read: an older controller's backend is not
		// rewritten for them.
		base["adv_check"] = "tcp-check"
		return
	}
	delete(base, "adv_check")
	delete(base, httpCheckList)
}

// httpCheckList is a backend's http-check rules (http_check_list).
const httpCheckList = "http_check_list"

// sameBut reports whether two sections' fields are the same but for key.
func sameBut(a, b Object, key string) bool {
	n := 0
	for k, v := range a {
		if k == key {
			continue
		}
		if w, ok := b[k]; !ok || !same(v, w) {
			return false
		}
		n++
	}
	for k := range b {
		if k != key {
			n--
		}
	}
	return n == 0
}

// ErrUnwritableCheck: the model asks for a health check this driver does
// not write (a TLS check: the apiserver mode's, which runs only on the
// local HAProxy), or whose HTTP path is not a plain absolute path
// (model.ValidCheckPath): the API writes the path into haproxy.cfg as it
// is, so anything else could become a directive. The model's producers
// validate paths; this is the driver's own guard.
var ErrUnwritableCheck = errors.New("dataplaneapi: a health check the driver cannot write")

// checkable refuses a model whose checks the driver cannot write, before
// anything is written.
func checkable(cfg model.Config) error {
	for _, b := range cfg.Backends {
		c := b.Check
		if !c.Enabled {
			continue
		}
		if c.HTTP.SSL || c.HTTP.CAFile != "" || c.HTTP.CertFile != "" {
			return fmt.Errorf("%w: backend %s: a TLS check", ErrUnwritableCheck, b.Name)
		}
		if c.HTTP.Path != "" && !model.ValidCheckPath(c.HTTP.Path) {
			return fmt.Errorf("%w: backend %s: HTTP path %q is not a plain absolute path", ErrUnwritableCheck, b.Name, c.HTTP.Path)
		}
	}
	return nil
}
