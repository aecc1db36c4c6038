package testcert

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Answer is what Get learnt: the status line and body of one GET, and
// of the TLS connection the names of the certificate served, the
// protocol agreed and whether the session was resumed.
type Answer struct {
	Status, Body string
	Names        []string
	ALPN         string
	Resumed      bool
}

// Get makes a TLS handshake over c with cfg and, unless h2 was agreed,
// sends one GET / for host (Connection: close) and reads the answer; it
// closes c. An error is the handshake's, the request's, or the read's
// when no status line came (a client turned away after the handshake
// reads an EOF: io.ErrUnexpectedEOF).
func Get(c net.Conn, cfg *tls.Config, host string) (Answer, error) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	tc := tls.Client(c, cfg)
	if err := tc.Handshake(); err != nil {
		return Answer{}, err
	}
	st := tc.ConnectionState()
	a := Answer{ALPN: st.NegotiatedProtocol, Resumed: st.DidResume}
	if len(st.PeerCertificates) > 0 {
		a.Names = st.PeerCertificates[0].DNSNames
	}
	if a.ALPN == "h2" {
		return a, nil
	}
	if _, err := io.WriteString(tc, "GET / HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		return a, err
	}
	all, err := io.ReadAll(tc)
	head, body, _ := strings.Cut(string(all), "\r\n\r\n")
	a.Status, _, _ = strings.Cut(head, "\r\n")
	a.Body = body
	switch {
	case a.Status != "":
		return a, nil
	case err == nil:
		return a, io.ErrUnexpectedEOF
	}
	return a, err
}

// ClientPair is a client certificate issued by parent to cn, as
// crypto/tls presents it, sending chain after it (the intermediates).
func ClientPair(t testing.TB, parent Cert, cn string, chain ...Cert) *tls.Certificate {
	t.Helper()
	c := Issue(t, Spec{CN: cn, Client: true}, parent)
	certPEM := c.PEM()
	for _, p := range chain {
		certPEM = append(certPEM, p.PEM()...)
	}
	pair, err := tls.X509KeyPair(certPEM, c.KeyPEM(t))
	if err != nil {
		t.Fatal(err)
	}
	return &pair
}
