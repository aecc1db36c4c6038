package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/dataplaneapi"
)

// Drivers of `run --driver`.
const (
	driverHAProxy   = "haproxy"
	driverDataplane = "dataplane"
)

// Environment variables of the older Data Plane API sync controller. The
// secrets among them are read only from the environment (or files), never
// from flags, so they cannot show in --help or a process listing.
const (
	envDataplaneURL      = "HAPROXY_DATAPLANE_URL"
	envDataplaneUser     = "HAPROXY_DATAPLANE_USERNAME"
	envDataplanePassword = "HAPROXY_DATAPLANE_PASSWORD"
	envDataplaneToken    = "HAPROXY_DATAPLANE_TOKEN"
	// legacyProbeAddress serves /healthz and /readyz where the older
	// controller's Deployment probes them (containerPort 8080).
	legacyProbeAddress = ":8080"
)

// dataplaneFlags select and configure the Data Plane API driver.
type dataplaneFlags struct {
	driver                             string
	url, user, passwordFile, tokenFile string
	caFile                             string
	insecure, createBackend            bool
	timeout                            time.Duration
}

func (f *dataplaneFlags) register(fs *pflag.FlagSet) {
	addGroup(fs, groupMode, scopeServices, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.driver, "driver", "", "haproxy: the local HAProxy through its sockets and config file; dataplane: through the HAProxy Data Plane API v3 (default: dataplane when --dataplane-url or HAPROXY_DATAPLANE_URL is set, else haproxy)")
	})
	addGroup(fs, groupDataplane, scopeDataplane, func(fs *pflag.FlagSet) {
		f.registerAPI(fs)
		fs.BoolVar(&f.createBackend, "dataplane-create-backend", false, "single-Service mode: create the backend when haproxy.cfg lacks it (default: report it and wait)")
	})
}

// registerAPI registers the flags that reach a Data Plane API (URL,
// credentials, TLS, timeout): run's and status's.
func (f *dataplaneFlags) registerAPI(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "dataplane-url", "", "Data Plane API base URL, e.g. http://haproxy:5555 (env HAPROXY_DATAPLANE_URL)")
	fs.StringVar(&f.user, "dataplane-username", "", "Data Plane API basic-auth user (env HAPROXY_DATAPLANE_USERNAME)")
	fs.StringVar(&f.passwordFile, "dataplane-password-file", "", "file holding the basic-auth password (or env HAPROXY_DATAPLANE_PASSWORD)")
	fs.StringVar(&f.tokenFile, "dataplane-token-file", "", "file holding a bearer token, instead of basic auth (or env HAPROXY_DATAPLANE_TOKEN)")
	fs.StringVar(&f.caFile, "dataplane-ca-file", "", "CA bundle of the Data Plane API's certificate (https)")
	fs.BoolVar(&f.insecure, "dataplane-insecure-skip-verify", false, "do not verify the Data Plane API's certificate (logged as a warning)")
	fs.DurationVar(&f.timeout, "dataplane-timeout", 10*time.Second, "timeout of each Data Plane API request")
}

// legacyDataplane maps the older controller's non-secret variables onto
// the flags (an explicit HAPROXY_K8S_SYNC_* variable or flag wins). Its
// URL variable also brings its defaults: /healthz and /readyz on :8080
// (where its Deployment's probes look), and one Service, ingress-nginx in
// INGRESS_NAMESPACE (default ingress-nginx), even when
// INGRESS_SERVICE_NAME is not set. Its WORKER_COUNT has no equivalent
// (passes are serialised) and is ignored.
func legacyDataplane(getenv func(string) string, fs *pflag.FlagSet) {
	for env, name := range map[string]string{envDataplaneURL: "dataplane-url", envDataplaneUser: "dataplane-username"} {
		if v := getenv(env); v != "" {
			setUnlessGiven(fs, name, v)
		}
	}
	if getenv(envDataplaneURL) == "" {
		return
	}
	setUnlessGiven(fs, "metrics-address", legacyProbeAddress)
	if f := fs.Lookup("service"); f == nil || f.Value.String() != "" {
		return
	}
	ns := getenv("INGRESS_NAMESPACE")
	if ns == "" {
		ns = "ingress-nginx"
	}
	setUnlessGiven(fs, "service", ns+"/ingress-nginx")
}

// selected reports whether the Data Plane API driver is the one to use.
func (f *dataplaneFlags) selected() (bool, error) {
	switch f.driver {
	case "":
		return f.url != "", nil
	case driverDataplane:
		if f.url == "" {
			return false, flagErr("--driver=dataplane needs --dataplane-url (or HAPROXY_DATAPLANE_URL)")
		}
		return true, nil
	case driverHAProxy:
		return false, nil
	}
	return false, flagErr("--driver: want haproxy or dataplane, got %q", f.driver)
}

// secret returns the content of file, else the environment variable's.
func secret(file, env string, getenv func(string) string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("reading the secret file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return getenv(env), nil
}

// dpTarget is one Data Plane API: its URL and credentials (files, else
// the environment).
type dpTarget struct {
	url, user, passwordFile, tokenFile string
}

// newDriverAt is the Data Plane API driver of the API at t, with the
// other --dataplane-* flags (CA, timeout, backend creation), for the
// desired state of dopts (shaped by driverCaps: in single-Service mode its
// backend is the operator's, named after the Service unless
// --backend-name or HAPROXY_BACKEND_NAME says otherwise).
func (f *dataplaneFlags) newDriverAt(t dpTarget, dopts desired.Options, getenv func(string) string, log *slog.Logger, recorder record.EventRecorder) (*dataplaneapi.Driver, error) {
	c, err := f.client(t, getenv, log)
	if err != nil {
		return nil, err
	}
	opts := dataplaneapi.Options{Client: c, CreateBackend: f.createBackend, Logger: log}
	if dopts.Service != "" {
		ns, name, _ := strings.Cut(dopts.Service, "/")
		opts.Seed = dopts.Backend
		svc := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name}
		opts.OnBackendMissing = func(be string) {
			msg := fmt.Sprintf("backend %q does not exist in HAProxy's configuration: create it in haproxy.cfg, or run with --dataplane-create-backend", be)
			log.Error("backend missing", "backend", be, "service", dopts.Service)
			if recorder != nil {
				recorder.Event(svc, corev1.EventTypeWarning, "BackendMissing", msg)
			}
		}
		opts.OnRangesRefused = func(string) {
			if recorder != nil {
				recorder.Event(svc, corev1.EventTypeWarning, "SourceRangesNotEnforced",
					"loadBalancerSourceRanges cannot be enforced in the operator's frontend (single-Service Data Plane API mode): the Service is refused, no server in service, until the ranges are removed")
			}
		}
	}
	return dataplaneapi.New(opts), nil
}

// client is a client of the API at t, with the credentials of t (files,
// else the environment) and the --dataplane-* CA, TLS and timeout flags.
func (f *dataplaneFlags) client(t dpTarget, getenv func(string) string, log *slog.Logger) (*dataplane.Client, error) {
	pw, err := secret(t.passwordFile, envDataplanePassword, getenv)
	if err != nil {
		return nil, fmt.Errorf("--dataplane-password-file: %w", err)
	}
	tok, err := secret(t.tokenFile, envDataplaneToken, getenv)
	if err != nil {
		return nil, fmt.Errorf("--dataplane-token-file: %w", err)
	}
	if tok != "" && t.user != "" {
		return nil, errors.New("Data Plane API: give a username and password, or a token, not both")
	}
	return dataplane.New(dataplane.Options{URL: t.url, Username: t.user, Password: pw, Token: tok, CAFile: f.caFile,
		InsecureSkipVerify: f.insecure, Timeout: f.timeout, Logger: log})
}

// redactURL drops credentials from a URL for the log.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// stopDataplane runs once passes have ended: it writes to the configuration
// the server changes HAProxy runs but haproxy.cfg does not have yet (for a
// few seconds at most: what is left is written by the next controller's
// first pass), then stops the driver's background writes.
func stopDataplane(d *dataplaneapi.Driver, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Flush(ctx); err != nil {
		log.Warn("dataplane: server changes not written to the configuration at exit; HAProxy runs them, the next controller writes them", "err", err)
	}
	d.Close()
}
