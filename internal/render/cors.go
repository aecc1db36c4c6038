package render

import (
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// CORS (model.CORS) as fixed rules of every HTTP frontend and entries of
// a map of its own, so that a policy added, changed or removed is data:
//
//   - cors (map_str): "aK" the action's policy, "C|METHODS|HEADERS|EXPOSE|AGE"
//     (C 1 with credentials; lists joined by ","; "*" to echo what the
//     preflight asks for; AGE in seconds or empty); "aK.o.ORIGIN" for
//     each allowed origin (lower case; "scheme://*.suffix" for a
//     wildcard, "scheme://*" for any host, "*" for any origin).
//
// The request's Origin (lower case) is looked up exactly, then as
// "scheme://*." + its host less one leading label, less two, ...
// (WildcardDepth times), then "scheme://*", then "*". A preflight of an
// action with a policy is answered 204 by HAProxy, allowed or not, and
// never reaches the backend; the headers are added by http-after-response
// rules, which see HAProxy's own answers as well as the backends'.

// HTTPCORS is the map kind of the actions' CORS policies.
const HTTPCORS = "cors"

// corsHeaders are the response headers the CORS rules set.
const (
	corsAllowOrigin      = "access-control-allow-origin"
	corsAllowCredentials = "access-control-allow-credentials"
	corsAllowMethods     = "access-control-allow-methods"
	corsAllowHeaders     = "access-control-allow-headers"
	corsExposeHeaders    = "access-control-expose-headers"
	corsMaxAge           = "access-control-max-age"
)

// writeCORS writes the request rules of the chosen action's CORS policy
// (after txn.act is known, before its redirect): whether the request's
// origin is allowed (txn.cok), and the preflight's answer.
func writeCORS(w func(...string), corsMap string) {
	look := func(v string) string { return "var(" + v + "),map_str(" + corsMap + ")" }
	w("\thttp-request set-var(txn.cors) " + look("txn.act"))
	w("\thttp-request set-var(txn.org) req.fhdr(origin) if { var(txn.cors) -m found }")
	const has = " if { var(txn.org) -m found }"
	const open = has + " !{ var(txn.cok) -m found }"
	w("\thttp-request set-var(txn.olc) var(txn.org),lower" + has)
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.act)].o.%[var(txn.olc)]\"" + has)
	w("\thttp-request set-var(txn.cok) " + look("txn.k") + has)
	w("\thttp-request set-var(txn.osc) var(txn.olc),field(1,:)" + has)
	w("\thttp-request set-var(txn.ohp) var(txn.olc),field(3,/)" + has)
	for i := 2; i < 2+WildcardDepth; i++ {
		w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.act)].o.%[var(txn.osc)]://*.%[var(txn.ohp),field(" + strconv.Itoa(i) + ",.,0)]\"" + open)
		w("\thttp-request set-var(txn.cok) " + look("txn.k") + open)
	}
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.act)].o.%[var(txn.osc)]://*\"" + open)
	w("\thttp-request set-var(txn.cok) " + look("txn.k") + open)
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.act)].o." + model.AnyOrigin + "\"" + open)
	w("\thttp-request set-var(txn.cok) " + look("txn.k") + open)
	// A preflight: what it asks for, kept for the answer's headers.
	w("\thttp-request set-var(txn.crm) req.fhdr(access-control-request-method) if { var(txn.org) -m found } METH_OPTIONS")
	w("\thttp-request set-var(txn.crh) req.fhdr(access-control-request-headers) if { var(txn.crm) -m found }")
	w("\thttp-request return status 204 if { var(txn.crm) -m found }")
}

// writeCORSResponse writes the response rules: the headers of an allowed
// origin's answers, a preflight's own among them.
func writeCORSResponse(w func(...string)) {
	const ok = " if { var(txn.cok) -m found }"
	const pre = ok + " { var(txn.crm) -m found }"
	field := func(n int) string { return "var(txn.cors),field(" + strconv.Itoa(n) + ",|)" }
	set := func(h, v, cond string) { w("\thttp-after-response set-header " + h + " " + v + cond) }
	w("\thttp-after-response add-header vary origin if { var(txn.cors) -m found }")
	set(corsAllowOrigin, "%[var(txn.org)]", ok)
	set(corsAllowCredentials, "true", ok+" { "+field(1)+" -m str 1 }")
	set(corsExposeHeaders, "%["+field(4)+"]", ok+" !{ "+field(4)+" -m len 0 }")
	set(corsAllowMethods, "%["+field(2)+"]", pre+" !{ "+field(2)+" -m len 0 } !{ "+field(2)+" -m str * }")
	set(corsAllowMethods, "%[var(txn.crm)]", pre+" { "+field(2)+" -m str * }")
	set(corsAllowHeaders, "%["+field(3)+"]", pre+" !{ "+field(3)+" -m len 0 } !{ "+field(3)+" -m str * }")
	set(corsAllowHeaders, "%[var(txn.crh)]", pre+" { "+field(3)+" -m str * } { var(txn.crh) -m found }")
	set(corsMaxAge, "%["+field(5)+"]", pre+" !{ "+field(5)+" -m len 0 }")
}

// corsEntries adds the entries of action aid's CORS policy: none for a
// policy that is not Valid.
func corsEntries(out map[string][]HTTPMapEntry, aid string, c *model.CORS) {
	if c == nil || c.Valid() != "" {
		return
	}
	cred := "0"
	if c.Credentials {
		cred = "1"
	}
	age := ""
	if c.MaxAge > 0 {
		age = strconv.Itoa(c.MaxAge)
	}
	out[HTTPCORS] = append(out[HTTPCORS], HTTPMapEntry{aid, cred + "|" + model.JoinList(c.Methods) + "|" + model.JoinList(c.Headers) + "|" + model.JoinList(c.Expose) + "|" + age})
	seen := map[string]bool{}
	for _, o := range c.Origins {
		if !seen[o] {
			seen[o] = true
			out[HTTPCORS] = append(out[HTTPCORS], HTTPMapEntry{aid + ".o." + o, "1"})
		}
	}
}

// keyCORS appends c's content to b (the memo's action key).
func keyCORS(b []byte, c *model.CORS) []byte {
	b = keyBool(b, c != nil)
	if c == nil {
		return b
	}
	for _, l := range [][]string{c.Origins, c.Methods, c.Headers, c.Expose} {
		b = keyInt(b, int64(len(l)))
		for _, s := range l {
			b = keyString(b, s)
		}
	}
	return keyInt(keyBool(b, c.Credentials), int64(c.MaxAge))
}
