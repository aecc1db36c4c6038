package conformance

import (
	"reflect"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// envTProxyProfiles names (comma-separated, as the suite spells them) the
// profiles run once more, on the first HAProxy binary, in tproxy mode
// after the passes in the suite's mode when that is ports: make test's
// TPROXY_CONFORMANCE (GATEWAY-TCP, GATEWAY-UDP and GATEWAY-TLS, the
// profiles whose listeners go behind the fixed listener), so that one
// start of the tier proves both listener modes.
const envTProxyProfiles = "HKS_CONFORMANCE_TPROXY"

// pass is one run of the suite on the tier: an HAProxy binary, the
// controller's listener mode and the profiles.
type pass struct {
	bin      string
	tproxy   bool
	extra    bool // the envTProxyProfiles pass
	profiles []suite.ConformanceProfileName
}

// passes are the suite's runs: one per HAProxy binary (envHAProxy) in
// the suite's mode (envListeners) with its profiles (envProfiles), then
// the envTProxyProfiles pass when the suite's mode is ports.
func passes(getenv func(string) string) []pass {
	tproxy := getenv(envListeners) == "tproxy"
	var out []pass
	for _, bin := range haproxyBins() {
		out = append(out, pass{bin: bin, tproxy: tproxy, profiles: profiles(getenv)})
	}
	if extra := getenv(envTProxyProfiles); extra != "" && !tproxy {
		out = append(out, pass{bin: out[0].bin, tproxy: true, extra: true, profiles: profileNames(extra)})
	}
	return out
}

// name is the pass's subtest name: haproxy-X.Y.Z (versionName), and
// -tproxy for the envTProxyProfiles pass.
func (p pass) name(t *testing.T) string {
	if p.extra {
		return versionName(t, p.bin) + "-tproxy"
	}
	return versionName(t, p.bin)
}

// TestPasses: the passes each environment asks for (no tier started).
func TestPasses(t *testing.T) {
	t.Setenv(envHAProxy, "/a/haproxy /b/haproxy")
	tcp, tls := suite.GatewayTCPConformanceProfileName, suite.GatewayTLSConformanceProfileName
	for _, c := range []struct {
		name string
		env  map[string]string
		want []pass
	}{
		{"ports, every profile", nil, []pass{
			{bin: "/a/haproxy", profiles: profiles(func(string) string { return "" })},
			{bin: "/b/haproxy", profiles: profiles(func(string) string { return "" })}}},
		{"ports, then TCP and TLS in tproxy mode on the first binary",
			map[string]string{envProfiles: "GATEWAY-TCP", envTProxyProfiles: "GATEWAY-TCP, GATEWAY-TLS"}, []pass{
				{bin: "/a/haproxy", profiles: []suite.ConformanceProfileName{tcp}},
				{bin: "/b/haproxy", profiles: []suite.ConformanceProfileName{tcp}},
				{bin: "/a/haproxy", tproxy: true, extra: true, profiles: []suite.ConformanceProfileName{tcp, tls}}}},
		{"tproxy already: no pass more", map[string]string{envListeners: "tproxy", envProfiles: "GATEWAY-TLS", envTProxyProfiles: "GATEWAY-TCP"}, []pass{
			{bin: "/a/haproxy", tproxy: true, profiles: []suite.ConformanceProfileName{tls}},
			{bin: "/b/haproxy", tproxy: true, profiles: []suite.ConformanceProfileName{tls}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := passes(func(k string) string { return c.env[k] })
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("passes:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
