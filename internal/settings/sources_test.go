package settings

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func TestNames(t *testing.T) {
	want := []string{
		"balance", "check", "check-interval", "rise", "fall", "send-proxy-v2", "accept-proxy",
		"timeout-connect", "timeout-client", "timeout-server", "maxconn", "backend-port",
	}
	if got := Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	if got := EnvName("check-interval"); got != "HAPROXY_K8S_SYNC_DEFAULT_CHECK_INTERVAL" {
		t.Errorf("EnvName = %q", got)
	}
	if got := FlagName("send-proxy-v2"); got != "default-send-proxy-v2" {
		t.Errorf("FlagName = %q", got)
	}
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    func(*Settings)
		errKeys []string
	}{
		{name: "empty", env: nil},
		{name: "empty values ignored", env: map[string]string{
			"HAPROXY_K8S_SYNC_DEFAULT_BALANCE": "", LegacyEnvBackendPort: "",
		}},
		{name: "all", env: map[string]string{
			"HAPROXY_K8S_SYNC_DEFAULT_BALANCE":         "leastconn",
			"HAPROXY_K8S_SYNC_DEFAULT_CHECK":           "false",
			"HAPROXY_K8S_SYNC_DEFAULT_CHECK_INTERVAL":  "5s",
			"HAPROXY_K8S_SYNC_DEFAULT_RISE":            "4",
			"HAPROXY_K8S_SYNC_DEFAULT_FALL":            "6",
			"HAPROXY_K8S_SYNC_DEFAULT_SEND_PROXY_V2":   "true",
			"HAPROXY_K8S_SYNC_DEFAULT_ACCEPT_PROXY":    "true",
			"HAPROXY_K8S_SYNC_DEFAULT_TIMEOUT_CONNECT": "3s",
			"HAPROXY_K8S_SYNC_DEFAULT_TIMEOUT_CLIENT":  "2m",
			"HAPROXY_K8S_SYNC_DEFAULT_TIMEOUT_SERVER":  "3m",
			"HAPROXY_K8S_SYNC_DEFAULT_MAXCONN":         "5000",
			"HAPROXY_K8S_SYNC_DEFAULT_BACKEND_PORT":    "8443",
		}, want: func(s *Settings) {
			*s = Settings{
				Balance: "leastconn", Check: CheckFalse, CheckInterval: 5 * time.Second, Rise: 4, Fall: 6,
				SendProxyV2: true, AcceptProxy: true, TimeoutConnect: 3 * time.Second,
				TimeoutClient: 2 * time.Minute, TimeoutServer: 3 * time.Minute, MaxConn: 5000, BackendPort: 8443,
			}
		}},
		{name: "legacy", env: map[string]string{
			LegacyEnvSendProxyV2: "true", LegacyEnvBackendPort: "30080",
		}, want: func(s *Settings) { s.SendProxyV2, s.BackendPort = true, 30080 }},
		{name: "new names win over legacy", env: map[string]string{
			LegacyEnvSendProxyV2: "true", "HAPROXY_K8S_SYNC_DEFAULT_SEND_PROXY_V2": "false",
			LegacyEnvBackendPort: "1", "HAPROXY_K8S_SYNC_DEFAULT_BACKEND_PORT": "2",
		}, want: func(s *Settings) { s.BackendPort = 2 }},
		{name: "errors leave settings unchanged", env: map[string]string{
			"HAPROXY_K8S_SYNC_DEFAULT_BALANCE": "source",
			"HAPROXY_K8S_SYNC_DEFAULT_RISE":    "1\nlisten x",
			LegacyEnvSendProxyV2:               "yes",
		}, errKeys: []string{"HAPROXY_SEND_PROXY_V2", "HAPROXY_K8S_SYNC_DEFAULT_RISE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Defaults()
			want := got
			if tt.want != nil {
				tt.want(&want)
			}
			err := FromEnv(&got, envFunc(tt.env))
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			if (err != nil) != (tt.errKeys != nil) {
				t.Fatalf("err = %v, want errors for %q", err, tt.errKeys)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
			}
			for _, k := range tt.errKeys {
				if !strings.Contains(err.Error(), "environment variable "+k+": invalid value") {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*Settings)
		wantErr string
	}{
		{name: "none"},
		{name: "values", args: []string{
			"--default-balance=first", "--default-check-interval", "250ms", "--default-rise=9",
			"--default-timeout-server=2h", "--default-maxconn=100", "--default-backend-port=9000",
		}, want: func(s *Settings) {
			s.Balance, s.CheckInterval, s.Rise = "first", 250*time.Millisecond, 9
			s.TimeoutServer, s.MaxConn, s.BackendPort = 2*time.Hour, 100, 9000
		}},
		{name: "bare booleans", args: []string{"--default-send-proxy-v2", "-default-accept-proxy"},
			want: func(s *Settings) { s.SendProxyV2, s.AcceptProxy = true, true }},
		{name: "explicit false", args: []string{"--default-check=false"},
			want: func(s *Settings) { s.Check = CheckFalse }},
		{name: "bare check is true", args: []string{"--default-check"},
			want: func(s *Settings) { s.Check = CheckTrue }},
		{name: "check auto", args: []string{"--default-check=true", "--default-check=auto"}},
		{name: "strict check", args: []string{"--default-check=1"},
			wantErr: `invalid boolean value "1" for -default-check: want auto, true or false`},
		{name: "strict duration", args: []string{"--default-timeout-client=1.5s"},
			wantErr: `invalid value "1.5s" for flag -default-timeout-client: want a duration like 500ms, 2s or 1m`},
		{name: "injection", args: []string{"--default-balance=source\nlisten x"},
			wantErr: `invalid value "source\nlisten x" for flag -default-balance: want one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Defaults()
			want := got
			if tt.want != nil {
				tt.want(&want)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			RegisterFlags(fs, &got)
			err := fs.Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestFlagUsage(t *testing.T) {
	s := Defaults()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	RegisterFlags(fs, &s)
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	for _, name := range Names() {
		if fs.Lookup(FlagName(name)) == nil {
			t.Errorf("flag for %s not registered", name)
		}
	}
	for _, want := range []string{"(default 2s)", "(default roundrobin)", "HAPROXY_K8S_SYNC_DEFAULT_MAXCONN"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPrecedence checks default < env < flag < annotation.
func TestPrecedence(t *testing.T) {
	env := map[string]string{
		"HAPROXY_K8S_SYNC_DEFAULT_BALANCE": "leastconn",
		"HAPROXY_K8S_SYNC_DEFAULT_RISE":    "4",
		"HAPROXY_K8S_SYNC_DEFAULT_FALL":    "5",
	}
	args := []string{"--default-rise=6", "--default-fall=7"}
	ann := map[string]string{Prefix + "fall": "8"}

	s := Defaults()
	if err := FromEnv(&s, envFunc(env)); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	RegisterFlags(fs, &s)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	got, errs := Apply(s, ann)
	if errs != nil {
		t.Fatal(errs)
	}
	tests := []struct {
		field     string
		got, want any
	}{
		{"default only", got.Fall > 0 && got.CheckInterval == 2*time.Second, true},
		{"env over default", got.Balance, "leastconn"},
		{"flag over env", got.Rise, 6},
		{"annotation over flag", got.Fall, 8},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.field, tt.got, tt.want)
		}
	}
}
