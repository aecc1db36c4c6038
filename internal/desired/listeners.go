package desired

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ReasonSharedListener: a Service asks for a per-frontend setting that,
// behind the one fixed listener of --listeners=tproxy, is the listener's
// as a whole (HAProxy has no per-stream client timeout in TCP mode, and
// maxconn is a frontend's): its value is not applied (docs/settings.md).
const ReasonSharedListener = "SharedListenerSetting"

// listenerDefaultTimeoutClient is the defaults section's timeout client,
// which the shared listener uses (internal/render).
const listenerDefaultTimeoutClient = time.Minute

// listenerProblem warns a Service whose frontend fe asks, behind the
// shared listener, for what only the listener as a whole has. Only a
// frontend on addresses of its own goes behind the listener; one on every
// address keeps its own frontend and its settings.
func listenerProblem(svc *corev1.Service, fe model.Frontend, opts Options) []Problem {
	if !opts.SharedListener || len(fe.Binds) == 0 {
		return nil
	}
	for _, b := range fe.Binds {
		if !b.Addr.IsValid() {
			return nil
		}
	}
	var asked []string
	if fe.MaxConn > 0 {
		asked = append(asked, settings.Prefix+"maxconn")
	}
	if fe.TimeoutClient > 0 && fe.TimeoutClient != listenerDefaultTimeoutClient {
		asked = append(asked, settings.Prefix+"timeout-client")
	}
	if len(asked) == 0 {
		return nil
	}
	msg := "frontend " + fe.Name + ": "
	for i, a := range asked {
		if i > 0 {
			msg += " and "
		}
		msg += a
	}
	return []Problem{{svc, ReasonSharedListener, msg + " not applied: with --listeners=tproxy every Service shares one listener, whose maxconn and client timeout are global (--global-maxconn, the defaults' timeout client 1m)"}}
}
