package apiserverlb

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Name is the name of the frontend, BackendName the backend's. They
// differ: HAProxy 3.3 and later refuse a frontend and a backend of the
// same name ("no longer supported as of 3.3"), which every release before
// the apiserver mode met 3.4 rendered here.
const (
	Name        = "apiserver"
	BackendName = "apiservers"
)

// ReadyzPath is what the health check asks: an apiserver that answers 200
// there can serve requests (etcd reachable, informers synced, not
// shutting down).
const ReadyzPath = "/readyz"

// Shape is everything in the model that does not come from a source.
type Shape struct {
	Listen []model.Bind
	Check  model.Check
	// Long-lived watches and streams (logs -f, exec) go through: the
	// timeouts bound idle connections, not requests.
	TimeoutClient, TimeoutServer time.Duration
}

// CheckOptions are the health-check flags.
type CheckOptions struct {
	Inter              time.Duration
	Rise, Fall         int
	CAFile             string // verify the apiservers' certificates
	InsecureSkipVerify bool   // verify none; only without CAFile
	ClientCertPEM      string // client certificate + key in one PEM file (see WriteClientPEM)
	Disabled           bool   // no health check at all (not recommended)
}

// DefaultInter, DefaultRise and DefaultFall give a failover of about two
// seconds: a dead apiserver fails two checks one second apart.
const (
	DefaultInter = time.Second
	DefaultRise  = 2
	DefaultFall  = 2
)

// NewShape validates the listen address and the check options. The check
// is HTTPS GET /readyz, verified with the CA file, or unverified only when
// InsecureSkipVerify allows it; with neither it is a TCP connect check.
func NewShape(listen []string, c CheckOptions) (Shape, error) {
	s := Shape{TimeoutClient: time.Hour, TimeoutServer: time.Hour}
	if len(listen) == 0 {
		return s, fmt.Errorf("%w --listen: empty", ErrInvalid)
	}
	for _, l := range listen {
		b, err := ParseListen(l)
		if err != nil {
			return s, err
		}
		s.Listen = append(s.Listen, b)
	}
	if c.Disabled {
		return s, nil
	}
	if c.Inter < 100*time.Millisecond || c.Inter > time.Hour {
		return s, fmt.Errorf("%w check interval %v: want 100ms to 1h", ErrInvalid, c.Inter)
	}
	if c.Rise < 1 || c.Rise > 100 || c.Fall < 1 || c.Fall > 100 {
		return s, fmt.Errorf("%w check rise %d / fall %d: want 1 to 100", ErrInvalid, c.Rise, c.Fall)
	}
	s.Check = model.Check{Enabled: true, Inter: c.Inter, Rise: c.Rise, Fall: c.Fall}
	if c.CAFile == "" && !c.InsecureSkipVerify {
		// Nothing to verify the apiservers with, and no leave to skip
		// verification: a TCP connect check (the caller warns).
		if c.ClientCertPEM != "" {
			return s, fmt.Errorf("%w: a client certificate for the health check needs the CA file (or insecure-skip-verify)", ErrInvalid)
		}
		return s, nil
	}
	h := model.HTTPCheck{Path: ReadyzPath, SSL: true}
	switch {
	case c.CAFile != "" && c.InsecureSkipVerify:
		return s, fmt.Errorf("%w: a CA file and insecure-skip-verify exclude each other", ErrInvalid)
	case c.CAFile != "":
		if !model.ValidFilePath(c.CAFile) {
			return s, fmt.Errorf("%w CA file %q: want an absolute path of letters, digits and /-._", ErrInvalid, c.CAFile)
		}
		h.CAFile = c.CAFile
	}
	if c.ClientCertPEM != "" {
		if !model.ValidFilePath(c.ClientCertPEM) {
			return s, fmt.Errorf("%w client certificate file %q: want an absolute path of letters, digits and /-._", ErrInvalid, c.ClientCertPEM)
		}
		h.CertFile = c.ClientCertPEM
	}
	s.Check.HTTP = h
	return s, nil
}

// ParseListen parses --listen: ":PORT" (all addresses), "IP:PORT" or
// "[IPv6]:PORT".
func ParseListen(l string) (model.Bind, error) {
	b, err := model.ParseBind(l)
	if err == nil && b.Addr.Zone() != "" {
		err = fmt.Errorf("want an IP address without a zone, got %q", b.Addr)
	}
	if err != nil {
		return model.Bind{}, fmt.Errorf("%w --listen %q: %v", ErrInvalid, l, err)
	}
	b.Addr = b.Addr.Unmap()
	return b, nil
}

// Config is the model for a list of apiservers: one frontend, one backend.
// An empty list gives a backend without servers (never applied by the
// loop once it has servers).
func (s Shape) Config(servers []netip.AddrPort) model.Config {
	be := model.Backend{
		Name:           BackendName,
		Service:        "kube-apiserver",
		Balance:        "roundrobin",
		Check:          s.Check,
		TimeoutConnect: 3 * time.Second,
		TimeoutServer:  s.TimeoutServer,
		Servers:        make([]model.Server, 0, len(servers)),
	}
	for _, ap := range servers {
		be.Servers = append(be.Servers, model.Server{Addr: ap.Addr(), Port: ap.Port()})
	}
	return model.Config{
		Frontends: []model.Frontend{{Name: Name, Service: "kube-apiserver", Binds: s.Listen, TimeoutClient: s.TimeoutClient, Backend: BackendName}},
		Backends:  []*model.Backend{&be},
	}
}
