// Package settings holds the per-Service tuning knobs of the generated HAProxy
// configuration and the strict parsers that read them from Service
// annotations, controller flags and environment variables.
//
// Precedence, lowest first: built-in default (Defaults), environment variable
// (FromEnv), controller flag (RegisterFlags), Service annotation (Apply).
//
// The values end up in haproxy.cfg, so the grammar is deliberately narrow:
// every accepted value is made of ASCII letters and digits only, and every
// parsed field renders (with FormatDuration or strconv) as [a-z0-9]+.
package settings

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Prefix is the common prefix of all annotation keys owned by the controller.
const Prefix = "haproxy-k8s-sync.io/"

// EnabledAnnotation opts a Service in. It is handled by the caller, is not a
// setting, and Apply neither parses it nor reports it as unknown.
const EnabledAnnotation = Prefix + "enabled"

// Annotations through which a Service asks for its address from the
// AddressPools (read by the pools package, not settings).
const (
	IPsAnnotation      = Prefix + "load-balancer-ips"
	PoolAnnotation     = Prefix + "address-pool"
	SharedIPAnnotation = Prefix + "allow-shared-ip"
)

// notSettings are the keys under Prefix that Apply leaves to others.
var notSettings = map[string]bool{EnabledAnnotation: true, IPsAnnotation: true, PoolAnnotation: true, SharedIPAnnotation: true}

// ErrInvalid classifies every error of this package: errors.Is(err, ErrInvalid).
var ErrInvalid = errors.New("invalid setting")

// Balance algorithms accepted for Settings.Balance.
var balances = []string{"roundrobin", "leastconn", "source", "first", "random"}

// Settings are the tunables of one Service's frontend and backend.
type Settings struct {
	Balance        string        // roundrobin|leastconn|source|first|random
	Check          CheckMode     // auto|true|false: servers checked by themselves
	CheckInterval  time.Duration // 100ms..1h
	Rise, Fall     int           // 1..100
	SendProxyV2    bool          // send PROXY v2 to servers
	AcceptProxy    bool          // frontend accepts PROXY
	TimeoutConnect time.Duration // 1ms..24h
	TimeoutClient  time.Duration // 1ms..24h
	TimeoutServer  time.Duration // 1ms..24h
	MaxConn        int           // 0: unset; else 1..1000000
	BackendPort    uint16        // 0: none; else server port override

	// From the Service's spec (set by the desired package, not by
	// annotations under Prefix; kept with the last good settings):
	// SourceRanges, the clients allowed (FormatSourceRanges of
	// ParseSourceRanges; "" for anyone), and Affinity, the ClientIP
	// session affinity timeout (0: none).
	SourceRanges string        `json:",omitempty"`
	Affinity     time.Duration `json:",omitempty"`
}

// Defaults returns the built-in defaults.
func Defaults() Settings {
	return Settings{
		Balance:        "roundrobin",
		Check:          CheckAuto,
		CheckInterval:  2 * time.Second,
		Rise:           2,
		Fall:           3,
		TimeoutConnect: 5 * time.Second,
		TimeoutClient:  time.Minute,
		TimeoutServer:  time.Minute,
	}
}

// FieldError reports one rejected key/value pair. Key is an annotation key, a
// flag name (with its leading dashes) or an environment variable name.
type FieldError struct {
	Key, Value, Reason string
}

func (e *FieldError) Error() string {
	return keyKind(e.Key) + ShowName(e.Key) + ": invalid value " + ShowValue(e.Value) + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// keyKind names where a key comes from, for messages.
func keyKind(key string) string {
	switch {
	case strings.HasPrefix(key, Prefix):
		return "annotation "
	case strings.HasPrefix(key, "-"):
		return "flag "
	case key != "" && strings.ToUpper(key) == key:
		return "environment variable "
	}
	return ""
}

// Apply overlays the annotations with Prefix on s and returns the result.
// Keys without Prefix are ignored; unknown keys under Prefix (other than
// EnabledAnnotation) are errors. If anything is wrong, Apply returns s
// unchanged together with every error found, sorted by key.
func Apply(s Settings, annotations map[string]string) (Settings, []error) {
	out := s
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(annotations)) {
		name, ok := strings.CutPrefix(key, Prefix)
		if !ok || notSettings[key] {
			continue
		}
		value := annotations[key]
		f := lookup(name)
		if f == nil {
			errs = append(errs, &FieldError{Key: key, Value: value, Reason: unknownReason(name)})
			continue
		}
		if err := f.set(&out, value); err != nil {
			errs = append(errs, &FieldError{Key: key, Value: value, Reason: err.Error()})
		}
	}
	if len(errs) > 0 {
		return s, errs
	}
	return out, nil
}

// Names returns the setting names (annotation keys without Prefix) in
// documentation order.
func Names() []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return names
}

func lookup(name string) *field {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

func unknownReason(name string) string {
	best, bestDist := "", 3 // suggest only close matches
	for _, f := range fields {
		if abs(len(name)-len(f.name)) >= bestDist {
			continue // the distance is at least the difference in length
		}
		if d := editDistance(name, f.name); d < bestDist {
			best, bestDist = f.name, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown setting (did you mean %s%s?)", Prefix, best)
	}
	return knownSettings()
}

// knownSettings is the reason for an unknown setting far from any name:
// built once, for a Service may carry thousands of them.
var knownSettings = sync.OnceValue(func() string {
	return "unknown setting; known settings are " + strings.Join(Names(), ", ")
})

// editDistance is the Levenshtein distance of two short strings, in bytes.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// EqualMaps reports whether a and b hold equal settings for the same
// keys. Maps of settings by Service hold pointers (desired.Result.Good:
// one object for equal settings, never changed once in a map), so equal
// maps need not hold the same objects.
func EqualMaps(a, b map[string]*Settings) bool {
	return maps.EqualFunc(a, b, func(x, y *Settings) bool { return x == y || x != nil && y != nil && *x == *y })
}
