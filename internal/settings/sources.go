package settings

import (
	"errors"
	"flag"
	"strings"
)

// FlagPrefix and EnvPrefix derive the flag and environment variable names
// from a setting name: check-interval gives --default-check-interval and
// HAPROXY_K8S_SYNC_DEFAULT_CHECK_INTERVAL.
const (
	FlagPrefix = "default-"
	EnvPrefix  = "HAPROXY_K8S_SYNC_DEFAULT_"
)

// Legacy environment variables of the old single-Service controller. They
// are read before the HAPROXY_K8S_SYNC_DEFAULT_* variables, which win.
const (
	LegacyEnvSendProxyV2 = "HAPROXY_SEND_PROXY_V2"
	LegacyEnvBackendPort = "HAPROXY_BACKEND_PORT"
)

// FlagName returns the flag name (without dashes) of a setting name.
func FlagName(name string) string { return FlagPrefix + name }

// EnvName returns the environment variable of a setting name.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// flagValue is the flag.Value of one setting, writing into a Settings.
type flagValue struct {
	f *field
	s *Settings
}

func (v *flagValue) String() string {
	if v == nil || v.f == nil || v.s == nil { // flag package probes zero values
		return ""
	}
	return v.f.get(v.s)
}

func (v *flagValue) Set(value string) error { return v.f.set(v.s, value) }

// IsBoolFlag lets boolean settings be given as a bare --default-check.
func (v *flagValue) IsBoolFlag() bool { return v != nil && v.f != nil && v.f.isBool }

// RegisterFlags registers one --default-<name> flag per setting on fs. The
// flags write into *s with the same strict parsers as annotations, and show
// the current content of *s as their default, so call it after FromEnv.
func RegisterFlags(fs *flag.FlagSet, s *Settings) {
	for i := range fields {
		f := &fields[i]
		fs.Var(&flagValue{f: f, s: s}, FlagName(f.name),
			"default "+f.usage+" (annotation "+Prefix+f.name+", env "+EnvName(f.name)+")")
	}
}

// FromEnv applies environment variables to *s; call it before the flags are
// parsed. It reads the legacy variables HAPROXY_SEND_PROXY_V2 and
// HAPROXY_BACKEND_PORT, then HAPROXY_K8S_SYNC_DEFAULT_<NAME> for every
// setting. Empty or unset variables are ignored. On error *s is left
// unchanged and the result joins every problem found (each a *FieldError).
func FromEnv(s *Settings, getenv func(string) string) error {
	out := *s
	var errs []error
	apply := func(key, name string) {
		value := getenv(key)
		if value == "" {
			return
		}
		if err := lookup(name).set(&out, value); err != nil {
			errs = append(errs, &FieldError{Key: key, Value: value, Reason: err.Error()})
		}
	}
	apply(LegacyEnvSendProxyV2, "send-proxy-v2")
	apply(LegacyEnvBackendPort, "backend-port")
	for _, f := range fields {
		apply(EnvName(f.name), f.name)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	*s = out
	return nil
}
