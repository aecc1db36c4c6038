package conformance

import (
	"reflect"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// pass is one run of the suite on the tier: an HAProxy binary, the
// controller's listener mode and the profiles.
type pass struct {
	bin      string
	tproxy   bool
	profiles []suite.ConformanceProfileName
}

// passes are the suite's runs: one per HAProxy binary (envHAProxy), each
// in the suite's listener mode (envListeners) with its profiles
// (envProfiles). make test runs the tproxy mode as a job of its own
// (hack/test.sh: test/conformance@tproxy, its own process, network
// namespace and tier), beside the per-version passes in ports mode.
func passes(getenv func(string) string) []pass {
	tproxy := getenv(envListeners) == "tproxy"
	var out []pass
	for _, bin := range haproxyBins() {
		out = append(out, pass{bin: bin, tproxy: tproxy, profiles: profiles(getenv)})
	}
	return out
}

// name is the pass's subtest name: haproxy-X.Y.Z (versionName), with
// -tproxy in tproxy mode, so that a failure's name says the mode.
func (p pass) name(t *testing.T) string {
	if p.tproxy {
		return versionName(t, p.bin) + "-tproxy"
	}
	return versionName(t, p.bin)
}

// TestPasses: the passes each environment asks for (no tier started).
func TestPasses(t *testing.T) {
	t.Setenv(envHAProxy, "/a/haproxy /b/haproxy")
	tcp, tls := suite.GatewayTCPConformanceProfileName, suite.GatewayTLSConformanceProfileName
	all := profiles(func(string) string { return "" })
	for _, c := range []struct {
		name string
		env  map[string]string
		want []pass
	}{
		{"ports, every profile", nil, []pass{
			{bin: "/a/haproxy", profiles: all},
			{bin: "/b/haproxy", profiles: all}}},
		{"ports unless tproxy", map[string]string{envListeners: "auto", envProfiles: "GATEWAY-TCP"}, []pass{
			{bin: "/a/haproxy", profiles: []suite.ConformanceProfileName{tcp}},
			{bin: "/b/haproxy", profiles: []suite.ConformanceProfileName{tcp}}}},
		{"tproxy, the profiles named", map[string]string{envListeners: "tproxy", envProfiles: "GATEWAY-TCP, GATEWAY-TLS"}, []pass{
			{bin: "/a/haproxy", tproxy: true, profiles: []suite.ConformanceProfileName{tcp, tls}},
			{bin: "/b/haproxy", tproxy: true, profiles: []suite.ConformanceProfileName{tcp, tls}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := passes(func(k string) string { return c.env[k] })
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("passes:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
