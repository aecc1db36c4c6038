package render

import (
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Legacy is a set of ways in which older releases wrote the same model
// differently, each a change of rendering that needs no reload to be
// correct: HAProxy running the older text behaves as the older release
// did, and nothing the controller does depends on the difference. A
// controller that finds HAProxy running such a text (after an upgrade of
// the controller, HAProxy kept running) keeps writing it that way until a
// reload is due for another reason, instead of reloading at once only to
// change how the model is written (docs/reliability.md, "Upgrading the
// controller").
//
// A change of rendering that alters the structure hash of a model must
// either add a flag here (and reproduce the older text with it:
// TestOlderReleases) or be a change that needs the reload, documented in
// docs/reliability.md with the fixtures of the older releases it
// reloads.
type Legacy uint8

const (
	// LooseChecked: the unbound ("loose") slots of a backend that
	// follows its nodes carry the node check, and such a backend has the
	// option httpchk of an HTTP node check (b05c188, 2026-11-24, until
	// issue 35). HAProxy reserves a file descriptor for each of those
	// servers, free or not, and refused to start or reload at 10,000
	// Services under 20,000 open files; a HAProxy that runs such a text
	// had them, and a server placed in such a slot is checked, so the
	// text stays until a reload is due anyway.
	LooseChecked Legacy = 1 << iota
	// HTTPClientCA: no `httpclient.ssl.verify none` in a config that
	// loads no Lua (until issue 29's st29c, 2026-11-30): HAProxy's HTTP
	// client loaded the system CA bundle at each start and reload, with
	// nothing to use it. A HAProxy that runs such a text holds the bundle
	// and serves the same; the line comes with the next reload.
	HTTPClientCA

	legacyAll = HTTPClientCA<<1 - 1
)

// String names the flags of l, for logs.
func (l Legacy) String() string {
	if l == 0 {
		return "current"
	}
	var names []string
	if l&LooseChecked != 0 {
		names = append(names, "loose-checked")
	}
	if l&HTTPClientCA != 0 {
		names = append(names, "httpclient-ca")
	}
	if rest := l &^ legacyAll; rest != 0 {
		names = append(names, "unknown")
	}
	return strings.Join(names, "+")
}

// MatchRendering finds how the config whose structure hash is running
// was written, if it holds cfg and layout: the Legacy (0 for the current
// rendering) whose structure hash, with opts otherwise the same, is
// running. It hashes the skeleton once for each combination of the
// flags: a caller does it only when the running hash is not the one it
// expects (a config it did not write itself).
func MatchRendering(cfg model.Config, layout model.Layout, opts Options, running string) (Legacy, bool) {
	if running == "" {
		return 0, false
	}
	for l := Legacy(0); l <= legacyAll; l++ {
		o := opts
		o.Legacy = l
		if StructureHash(cfg, layout, o) == running {
			return l, true
		}
	}
	return 0, false
}
