package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestNodeCheckFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    model.Check
		wantErr string
	}{
		{args: nil, // kube-proxy's /healthz by default
			want: model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}},
		{args: []string{"--node-check=none"}, want: model.Check{}},
		{args: []string{"--node-check=http:10256/healthz"},
			want: model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}},
		{args: []string{"--node-check=tcp:10250", "--node-check-interval=500ms", "--node-check-rise=1", "--node-check-fall=3"},
			want: model.Check{Enabled: true, Inter: 500 * time.Millisecond, Rise: 1, Fall: 3, Port: 10250}},
		{args: []string{"--node-check=http:10256"}, wantErr: "want http:PORT/PATH"},
		{args: []string{"--node-check=http:10256/healthz\n\tlisten x"}, wantErr: "want http:PORT/PATH"},
		{args: []string{"--node-check=http:10256/a b"}, wantErr: "want http:PORT/PATH"},
		{args: []string{"--node-check=tcp:0"}, wantErr: "bad port"},
		{args: []string{"--node-check=tcp:70000"}, wantErr: "bad port"},
		{args: []string{"--node-check=udp:53"}, wantErr: "want http:PORT/PATH, tcp:PORT or none"},
		{args: []string{"--node-check=tcp:10256", "--node-check-interval=1ms"}, wantErr: "--node-check-interval"},
		{args: []string{"--node-check=tcp:10256", "--node-check-fall=0"}, wantErr: "--node-check-fall"},
		{args: []string{"--local-check=healthcheck"}, wantErr: "--local-check: want service-port or health-check-node-port"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			s := parseShape(t, tc.args)
			o, err := s.desiredOptions()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.NodeCheck != tc.want {
				t.Errorf("NodeCheck = %+v, want %+v", o.NodeCheck, tc.want)
			}
			if !o.LocalHealthCheck {
				t.Errorf("LocalHealthCheck off by default (issue 29: a Local Service is checked on its healthCheckNodePort)")
			}
		})
	}
}

// Whether --node-check was given (the command line or its variable): the
// Data Plane API's single-Service mode applies it only then.
func TestNodeCheckGiven(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{name: "default", want: false},
		{name: "flag, the default's value", args: []string{"--node-check=http:10256/healthz"}, want: true},
		{name: "flag none", args: []string{"--node-check=none"}, want: true},
		{name: "variable", env: map[string]string{"HAPROXY_K8S_SYNC_NODE_CHECK": "tcp:10250"}, want: true},
		{name: "other node-check flags only", args: []string{"--node-check-interval=1s"}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("t")
			var s shape
			s.register(fs, env(tc.env))
			if err := parse(fs, tc.args, env(tc.env), &s); err != nil {
				t.Fatal(err)
			}
			o, err := s.desiredOptions()
			if err != nil {
				t.Fatal(err)
			}
			if o.CarryNodeCheck != tc.want {
				t.Errorf("CarryNodeCheck = %v, want %v", o.CarryNodeCheck, tc.want)
			}
			if tc.env != nil && o.NodeCheck.Port != 10250 {
				t.Errorf("the variable's check was not taken: %+v", o.NodeCheck)
			}
		})
	}
}

// The controller says once at start which node check is in effect.
func TestNodeCheckLogStart(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		adapt func(*desired.Options)
		want  string
	}{
		{want: `msg="node check: servers with check auto follow their node and its check; every node must answer it` +
			`, or its servers go down (no kube-proxy /healthz there: --node-check=tcp:PORT or none)" node-check=http:10256/healthz interval=2s rise=2 fall=2`},
		{args: []string{"--node-check=tcp:10250", "--node-check-fall=3"}, want: "node-check=tcp:10250 interval=2s rise=2 fall=3"},
		{args: []string{"--node-check=none"}, want: `msg="node check: none; servers with check auto are checked by themselves, on their own port"`},
		{args: []string{"--targets=pods"}, want: `msg="node check: not used`},
		{adapt: func(o *desired.Options) { o.TrackNodes = false }, want: `msg="node check: not used`}, // as the Data Plane API driver
		{args: []string{"--node-check=tcp:10250"}, adapt: func(o *desired.Options) { o.TrackNodes = false }, // its single-Service mode, given
			want: `msg="node check: on each server of the operator's backend`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			s := parseShape(t, tc.args)
			o, err := s.desiredOptions()
			if err != nil {
				t.Fatal(err)
			}
			if tc.adapt != nil {
				tc.adapt(&o)
			}
			var out bytes.Buffer
			s.nodeCheck.logStart(slog.New(slog.NewTextHandler(&out, nil)), o)
			if strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), tc.want) {
				t.Errorf("logged %q, want one line with %q", out.String(), tc.want)
			}
		})
	}
}

// parseShape parses args as run's model-shaping flags.
func parseShape(t *testing.T, args []string) shape {
	t.Helper()
	fs := newFlagSet("t")
	var s shape
	s.register(fs, env(nil))
	if err := parse(fs, args, env(nil), &s); err != nil {
		t.Fatal(err)
	}
	return s
}
