package cli

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gatewayctl"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingressctl"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"

	"github.com/spf13/pflag"
)

var _ gatewayctl.PooledBeside = (*ingressctl.Server)(nil)

// ingressFlags serve Ingresses beside the Gateways (docs/ingress.md):
// run --mode=gateway --ingress-class=NAME.
type ingressFlags struct {
	class       string
	httpPort    uint16
	httpsPort   uint16
	defaultCert string
	globalHeaderFlags
}

// globalHeaderFlags name ingress-nginx's controller-wide header
// ConfigMaps, flags of run and render alike.
type globalHeaderFlags struct {
	// proxySetHeaders and addHeaders: NAMESPACE/NAME of ConfigMaps of
	// headers every Ingress path carries (ingress/globalheaders.go).
	proxySetHeaders, addHeaders string
}

// register adds the flags; where says where the ConfigMap comes from
// (run: "--ingress-class", render: its input).
func (f *globalHeaderFlags) register(fs *pflag.FlagSet, where string) {
	fs.StringVar(&f.proxySetHeaders, "ingress-proxy-set-headers", "", "NAMESPACE/NAME of a ConfigMap of request headers (each key a header name, its value the value) sent to the Pods of every Ingress path, as ingress-nginx's proxy-set-headers ("+where+"); an Ingress's own headers of a name win")
	fs.StringVar(&f.addHeaders, "ingress-add-headers", "", "NAMESPACE/NAME of a ConfigMap of response headers sent to the clients of every Ingress path, as ingress-nginx's add-headers ("+where+"); an Ingress's custom-headers of a name win")
}

// check refuses a value that is not NAMESPACE/NAME.
func (f *globalHeaderFlags) check() error {
	for n, v := range map[string]string{"ingress-proxy-set-headers": f.proxySetHeaders, "ingress-add-headers": f.addHeaders} {
		if v != "" && refKey(v).Namespace == "" {
			return flagErr("--%s: want NAMESPACE/NAME, got %q", n, v)
		}
	}
	return nil
}

// keys are the ConfigMaps named (zero keys for none).
func (f *globalHeaderFlags) keys() (proxySet, add ingress.Key) {
	return refKey(f.proxySetHeaders), refKey(f.addHeaders)
}

func (f *ingressFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.class, "ingress-class", "", "with --mode=gateway, also serve the Ingresses of this IngressClass (spec.controller "+ingress.ControllerName+"; or the kubernetes.io/ingress.class annotation) on the HTTP path of the Gateways (docs/ingress.md); off when empty")
	fs.Uint16Var(&f.httpPort, "ingress-http-port", 80, "the Ingresses' HTTP port (--ingress-class)")
	fs.Uint16Var(&f.httpsPort, "ingress-https-port", 443, "the Ingresses' HTTPS port, served once a TLS Secret resolves (--ingress-class)")
	f.globalHeaderFlags.register(fs, "--ingress-class")
	fs.StringVar(&f.defaultCert, "ingress-default-certificate", "", "NAMESPACE/NAME of the kubernetes.io/tls Secret served to clients naming no host of an Ingress's certificate (--ingress-class); default: the first certificate by name")
}

// check refuses the Ingress flags outside the gateway mode, or
// malformed. With --instance they are served on every instance (local
// HAProxy only, as the gateway mode's routes), their status once all run
// them.
func (f *ingressFlags) check(mode string, given map[string]bool) error {
	if f.class == "" {
		for _, n := range []string{"ingress-http-port", "ingress-https-port", "ingress-default-certificate", "ingress-proxy-set-headers", "ingress-add-headers"} {
			if given[n] {
				return flagErr("--%s needs --ingress-class", n)
			}
		}
		return nil
	}
	switch {
	case mode != modeGateway:
		return flagErr("--ingress-class serves Ingresses beside the Gateways: give --mode=gateway")
	case f.httpPort == 0 || f.httpsPort == 0 || f.httpPort == f.httpsPort:
		return flagErr("--ingress-http-port and --ingress-https-port: two different ports, not 0")
	}
	if f.defaultCert != "" && refKey(f.defaultCert).Namespace == "" {
		return flagErr("--%s: want NAMESPACE/NAME, got %q", "ingress-default-certificate", f.defaultCert)
	}
	return f.globalHeaderFlags.check()
}

// refKey reads a flag's NAMESPACE/NAME (zero: not one).
func refKey(v string) ingress.Key {
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return ingress.Key{}
	}
	return ingress.Key{Namespace: ns, Name: name}
}

func (f *ingressFlags) certKey() gateway.Key {
	ns, name, _ := strings.Cut(f.defaultCert, "/")
	return gateway.Key{Namespace: ns, Name: name}
}

// recorder records the Ingresses' Events (nil without --ingress-class).
func (f *ingressFlags) recorder(ctx context.Context, client kubernetes.Interface) record.EventRecorder {
	if f.class == "" {
		return nil
	}
	bc := record.NewBroadcaster(record.WithContext(ctx))
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "haproxy-k8s-sync"})
}

// setup makes the Ingress source of the gateway mode's loop (nil without
// --ingress-class): src also watches Ingresses; Events through rec
// (recorder, gated by leadership), status through a client of its own;
// connectReq: the HAProxy sets a connect timeout per request (the
// driver's render.Options.ConnectPerRequest, from the same version);
// pooled: --address-pools (the class may name a pool: ingressctl/pool.go).
func (f *ingressFlags) setup(src *source.Gateway, cfg *rest.Config, addrs []netip.Addr, qps float32, burst int, connectReq, pooled bool, rec record.EventRecorder, log *slog.Logger) (*ingressctl.Server, error) {
	if f.class == "" {
		return nil, nil
	}
	src.WithIngress(f.certKey())
	setH, addH := f.keys()
	src.WithIngressConfigMaps(setH, addH)
	sclient, err := statusClient(cfg)
	if err != nil {
		return nil, err
	}
	k := f.certKey()
	return ingressctl.New(src, ingressctl.Options{
		Ingress: ingress.Options{Class: f.class, Addresses: addrs, HTTPPort: f.httpPort, HTTPSPort: f.httpsPort,
			DefaultCert: ingress.Key{Namespace: k.Namespace, Name: k.Name}, ProxySetHeaders: setH, AddHeaders: addH, ConnectPerRequest: connectReq},
		Client: sclient, QPS: qps, Burst: burst, Recorder: rec, Logger: log, Pooled: pooled,
	}), nil
}
