package render

import (
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The client's certificate passed to the backend in request headers
// (model.HTTPAccess.ClientCert: an Ingress's auth-tls-secret, and
// auth-tls-pass-certificate-to-upstream), as ingress-nginx names them:
//
//   - ssl-client-verify: SUCCESS (a certificate, verified: HAProxy
//     refuses one that is not in the handshake), NONE (none sent, under
//     auth-tls-verify-client: optional);
//   - ssl-client-subject-dn, ssl-client-issuer-dn: the names in RFC 2253
//     form (nginx's $ssl_client_s_dn and $ssl_client_i_dn);
//   - ssl-client-cert, with ClientCertPass: the certificate in PEM,
//     URL-escaped (nginx's $ssl_client_escaped_cert), its base64 on one
//     line (nginx wraps it at 64 characters; HAProxy has no converter
//     that wraps).
//
// HAProxy Ingress's names (ClientCertHAInfo, ClientCertHAPass: its
// auth-tls-secret and auth-tls-cert-header), with its default prefix
// X-SSL and its very samples, written as its rules write them (%{+Q},
// which HAProxy does not quote in a header):
// X-SSL-Client-CN (the subject's CN), X-SSL-Client-DN (the subject in
// HAProxy's default form, /C=../CN=..), X-SSL-Client-SHA1 (the DER's
// SHA-1, upper-case hex) and with ClientCertHAPass X-SSL-Client-Cert (the
// DER in base64), set on every request of the host as HAProxy Ingress
// sets them.
//
// Fixed rules of every HTTP frontend that terminates TLS and has access
// rules (an Ingress's), reading "aK.t" of the access map: an action
// turning them on or off is map data. A header of these names the client
// sent is removed first, so the backend never reads one the client wrote.

// ClientCertHeaders are the request headers the rules set, in order.
var ClientCertHeaders = []string{"ssl-client-verify", "ssl-client-subject-dn", "ssl-client-issuer-dn", "ssl-client-cert"}

// HAClientCertHeaders are HAProxy Ingress's, in order.
var HAClientCertHeaders = []string{"X-SSL-Client-CN", "X-SSL-Client-DN", "X-SSL-Client-SHA1", "X-SSL-Client-Cert"}

// writeClientCertHeaders writes the rules (after the action's own header
// changes, so none of these names can be set by an annotation).
func writeClientCertHeaders(w func(...string), accessMap string) {
	on := " if { var(txn.tc) -m str " + strconv.Itoa(int(model.ClientCertInfo)) + " " + strconv.Itoa(int(model.ClientCertPass)) + " }"
	w("\thttp-request set-var(txn.tc) var(txn.act),concat(.t),map_str(" + accessMap + ")")
	for _, n := range ClientCertHeaders {
		w("\thttp-request del-header " + n + on)
	}
	w("\thttp-request set-header ssl-client-verify NONE" + on + " !{ ssl_c_used }")
	w("\thttp-request set-header ssl-client-verify SUCCESS" + on + " { ssl_c_used } { ssl_c_verify 0 }")
	w("\thttp-request set-header ssl-client-verify FAILED:%[ssl_c_verify]" + on + " { ssl_c_used } !{ ssl_c_verify 0 }")
	w("\thttp-request set-header ssl-client-subject-dn %[ssl_c_s_dn(,0,rfc2253)]" + on + " { ssl_c_used }")
	w("\thttp-request set-header ssl-client-issuer-dn %[ssl_c_i_dn(,0,rfc2253)]" + on + " { ssl_c_used }")
	w("\thttp-request set-header ssl-client-cert -----BEGIN%%20CERTIFICATE-----%%0A%[ssl_c_der,base64,url_enc]%%0A-----END%%20CERTIFICATE-----%%0A" +
		" if { var(txn.tc) -m str " + strconv.Itoa(int(model.ClientCertPass)) + " } { ssl_c_used }")
	ha := " if { var(txn.tc) -m str " + strconv.Itoa(int(model.ClientCertHAInfo)) + " " + strconv.Itoa(int(model.ClientCertHAPass)) + " }"
	for _, n := range HAClientCertHeaders {
		w("\thttp-request del-header " + n + ha)
	}
	w("\thttp-request set-header X-SSL-Client-CN %{+Q}[ssl_c_s_dn(cn)]" + ha)
	w("\thttp-request set-header X-SSL-Client-DN %{+Q}[ssl_c_s_dn]" + ha)
	w("\thttp-request set-header X-SSL-Client-SHA1 %{+Q}[ssl_c_sha1,hex]" + ha)
	w("\thttp-request set-header X-SSL-Client-Cert %{+Q}[ssl_c_der,base64] if { var(txn.tc) -m str " + strconv.Itoa(int(model.ClientCertHAPass)) + " }")
}

// clientCertEntry adds action a's entry ("aK.t": its ClientCert).
func clientCertEntry(rel map[string][]HTTPMapEntry, a *model.HTTPAccess) {
	if a == nil || a.ClientCert < model.ClientCertInfo || a.ClientCert > model.ClientCertHAPass {
		return
	}
	rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".t", strconv.Itoa(int(a.ClientCert))})
}
