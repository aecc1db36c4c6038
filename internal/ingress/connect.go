package ingress

import (
	"strconv"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ingress-nginx's proxy-connect-timeout (whole seconds) and HAProxy
// Ingress's timeout-connect (a HAProxy time): how long a connection to a
// Pod may take to be established. The value is honoured exactly (a
// HAProxy time in microseconds rounded up to the millisecond, HAProxy's
// unit); 5 s (nginx's default, the defaults section's) is nothing to set.
//
// HAProxy 3.4+ sets a connect timeout per request (http-request
// set-timeout connect; Options.ConnectPerRequest, from --haproxy-bin's
// version): the timeout is the paths' map data (s.connectReq, pathRoute's
// model.HTTPActionExt.Connect: the timeouts map's "aK.c", render/httpext.go)
// and the Ingress's backends are the Service port's usual ones: no reload
// for any value.
//
// 2.6 to 3.3 set no connect timeout per request (set-timeout takes
// server, tunnel and from 3.0 client), so it is a backend setting,
// `timeout connect`: the Ingress's backends are backends of their own,
// named by the timeout (variant.connect, ingress.go). A value's first use
// is one reload (a backend HAProxy does not have yet) or, with
// --backend-pool, a spare of its class when the pool has one free; every
// other Ingress with the same value none.

// parseConnect reads proxy-connect-timeout or timeout-connect (name) into
// s.connect; nginx's key wins when both are given.
func (s *parsed) parseConnect(name, val string) string {
	var d time.Duration
	if name == "proxy-connect-timeout" {
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || time.Duration(n)*time.Second > maxTimeout {
			return settings.ShowValue(val) + " is not a whole number of seconds from 1 to 86400"
		}
		d, s.connectNginx = time.Duration(n)*time.Second, true
	} else {
		var why string
		if d, why = parseHAProxyTime(val); why != "" {
			return why
		}
		d = (d + time.Millisecond - 1).Truncate(time.Millisecond) // the backends' names count ms
		if s.connectNginx {
			return ""
		}
	}
	s.connect = d
	return ""
}

// defaultsConnect is the defaults' timeout connect (render.writeDefaults):
// a backend given it needs no backend of its own.
const defaultsConnect = 5 * time.Second

// backendConnect is the connect timeout the Ingress's backends carry: 0
// for none or the defaults'.
func (s *parsed) backendConnect() time.Duration {
	if s.connect == defaultsConnect {
		return 0
	}
	return s.connect
}

// connectTag is the part a connect timeout adds to its backends' names
// ("" for none): the milliseconds.
func connectTag(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return "c" + strconv.FormatInt(d.Milliseconds(), 10)
}
