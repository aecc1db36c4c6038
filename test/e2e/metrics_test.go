package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The controller's /metrics count what it did: a reload under its reason,
// Runtime API commands for an endpoint change (and no reload for it),
// refused Services by reason, the model's size; the exposition passes
// `promtool check metrics`; /healthz and /readyz answer.
func TestMetricsCountWhatHappens(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: `make deps` installs it (Debian's prometheus package)")
	}
	e := newEnv(t)
	np := nodePort()
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, np, np+1)
	}
	addr := loopbackAddr(t)
	e.startController("--metrics-address", addr)
	e.eventually("/healthz", httpStatus("http://"+addr+"/healthz", 200))
	e.eventually("/readyz", httpStatus("http://"+addr+"/readyz", 200))
	m := &scraper{url: "http://" + addr + "/metrics"}
	e.eventually("a first pass applied", m.atLeast(`haproxy_k8s_sync_pass_duration_seconds{driver="haproxy",outcome="applied"}`, 1))

	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np, Local: true})
	e.setEndpoints("web", pod(1, "n1"))
	e.eventually("web serves", serves(port, "n1"))
	// The first reload after a start replaces a config the controller
	// did not render; the next one adds a frontend. In tproxy mode init
	// wrote the fixed listeners as the first pass has them (no reload),
	// and the first Service is a key of the listener's map: its reload
	// adds the backend pool's spares, one of which it takes.
	if tproxyMode() {
		e.eventually("the first reload counted as backend_added", m.atLeast(`haproxy_k8s_sync_reloads_total{driver="haproxy",reason="backend_added"}`, 1))
		if v := m.value(t, `haproxy_k8s_sync_reloads_total{driver="haproxy",reason="config_differs"}`); v != 0 {
			t.Errorf("%v reloads counted as config_differs after init wrote the config, want none", v)
		}
	} else {
		e.eventually("the first reload counted", m.atLeast(`haproxy_k8s_sync_reloads_total{driver="haproxy",reason="config_differs"}`, 1))
	}
	port2 := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "api", Port: port2, NodePort: np + 1})
	e.eventually("api serves", serves(port2, "n1", "n2", "n3"))
	if tproxyMode() { // behind the fixed listener, with the pool, a new Service is no reload
		all, err := m.series()
		if err != nil {
			t.Fatal(err)
		}
		if v := all[`haproxy_k8s_sync_reloads_total{driver="haproxy",reason="frontend_added"}`]; v != 0 {
			t.Errorf("a new Service behind the fixed listener counted %v reloads as frontend_added, want none", v)
		}
	} else {
		e.eventually("the reload counted as frontend_added", m.equal(`haproxy_k8s_sync_reloads_total{driver="haproxy",reason="frontend_added"}`, 1))
	}

	reloads := m.sum(t, "haproxy_k8s_sync_reloads_total")
	cmds := m.value(t, `haproxy_k8s_sync_runtime_commands_total{driver="haproxy"}`)
	e.setEndpoints("web", pod(1, "n1"), pod(2, "n2"))
	e.eventually("web serves from two nodes", serves(port, "n1", "n2"))
	e.eventually("runtime commands counted", m.atLeast(`haproxy_k8s_sync_runtime_commands_total{driver="haproxy"}`, cmds+1))
	e.eventually("servers by state", m.equal(`haproxy_k8s_sync_servers{driver="haproxy",state="ready"}`, 2+3))
	if got := m.sum(t, "haproxy_k8s_sync_reloads_total"); got != reloads {
		t.Errorf("reloads went from %v to %v for an endpoint change", reloads, got)
	}
	if got := m.value(t, `haproxy_k8s_sync_runtime_command_failures_total{driver="haproxy"}`); got != 0 {
		t.Errorf("runtime command failures: %v", got)
	}

	e.createService(lab.Service{Namespace: ns, Name: "second", Port: port, NodePort: np + 2})
	e.createUDPService(lab.Service{Namespace: ns, Name: "dns", Port: 53, NodePort: np + 3})
	e.eventually("PortConflict counted", m.equal(`haproxy_k8s_sync_services_refused{driver="haproxy",reason="PortConflict"}`, 1))
	e.eventually("UnsupportedProtocol counted", m.equal(`haproxy_k8s_sync_services_refused{driver="haproxy",reason="UnsupportedProtocol"}`, 1))
	for series, want := range map[string]float64{
		`haproxy_k8s_sync_services_served{driver="haproxy"}`:                               2,
		`haproxy_k8s_sync_frontends{driver="haproxy"}`:                                     2,
		`haproxy_k8s_sync_services_refused{driver="haproxy",reason="NoNodePort"}`:          0,
		`haproxy_k8s_sync_reload_failures_total{driver="haproxy",reason="frontend_added"}`: 0,
	} {
		if got := m.value(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	// No `haproxy -c` on the local driver's reload path (issue 29: the
	// master's parse is the one check): its check phase is never observed.
	if got := m.value(t, `haproxy_k8s_sync_phase_duration_seconds{driver="haproxy",phase="check"}`); got != 0 {
		t.Errorf("the local driver's check phase = %v, want none", got)
	}
	for _, series := range []string{
		`haproxy_k8s_sync_phase_duration_seconds{driver="haproxy",phase="reload"}`,
		`haproxy_k8s_sync_phase_duration_seconds{driver="haproxy",phase="runtime"}`,
		`haproxy_k8s_sync_phase_duration_seconds{driver="haproxy",phase="parse"}`,
		`haproxy_k8s_sync_workqueue_adds_total{name="haproxy-k8s-sync"}`,
		`haproxy_k8s_sync_last_success_timestamp_seconds{driver="haproxy"}`,
	} {
		if got := m.value(t, series); got <= 0 {
			t.Errorf("%s = %v, want > 0", series, got)
		}
	}

	if got := m.sum(t, "haproxy_k8s_sync_build_info"); got != 1 {
		t.Errorf("build_info: %v, want one series of value 1", got)
	}

	body := m.scrape(t)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// loopbackAddr returns a free address in this file's loopback range
// (127.84.0.0/16), for servers the test starts.
func loopbackAddr(t *testing.T) string {
	t.Helper()
	ip := fmt.Sprintf("127.84.%d.%d", rand.IntN(250)+1, rand.IntN(250)+1)
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpStatus(url string, want int) func() error {
	return func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
		}
		return nil
	}
}

// scraper reads one controller's /metrics.
type scraper struct{ url string }

func (s *scraper) scrape(t *testing.T) []byte {
	t.Helper()
	b, err := s.get()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *scraper) get() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", s.url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// series maps each series, written `name{label="value",...}` with labels
// sorted, to its value; a histogram's series is its count.
func (s *scraper) series() (map[string]float64, error) {
	b, err := s.get()
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[seriesName(name, m)] = metricValue(m)
		}
	}
	return out, nil
}

func seriesName(name string, m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return name
	}
	var ls []string
	for _, l := range m.GetLabel() { // the parser sorts them
		ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return name + "{" + strings.Join(ls, ",") + "}"
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func (s *scraper) value(t *testing.T, series string) float64 {
	t.Helper()
	all, err := s.series()
	if err != nil {
		t.Fatal(err)
	}
	return all[series]
}

// sum adds the values of every series of a metric.
func (s *scraper) sum(t *testing.T, name string) float64 {
	t.Helper()
	all, err := s.series()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for k, v := range all {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += v
		}
	}
	return total
}

func (s *scraper) atLeast(series string, min float64) func() error {
	return s.check(series, func(v float64) bool { return v >= min }, fmt.Sprintf(">= %v", min))
}

func (s *scraper) equal(series string, want float64) func() error {
	return s.check(series, func(v float64) bool { return v == want }, fmt.Sprintf("== %v", want))
}

func (s *scraper) check(series string, ok func(float64) bool, what string) func() error {
	return func() error {
		all, err := s.series()
		if err != nil {
			return err
		}
		if v, found := all[series]; !found || !ok(v) {
			return fmt.Errorf("%s = %v (exported: %v), want %s", series, v, found, what)
		}
		return nil
	}
}
