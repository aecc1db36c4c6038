package certs

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

func TestCABundle(t *testing.T) {
	ca := testcert.CA(t, "a CA").PEM()
	key := testcert.Issue(t, testcert.Spec{CN: "x"}, testcert.Cert{}).KeyPEM(t)
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte // nil: ErrNoCA
		why  string
	}{
		{"one CA", ca, ca, ""},
		{"CRLF and blank lines, a key beside", append(append(bytes.ReplaceAll(ca, []byte("\n"), []byte("\r\n")), "\n\n"...), key...), ca, ""},
		{"empty", nil, nil, "holds no PEM certificate"},
		{"a key only", key, nil, "holds no PEM certificate"},
		{"a certificate that does not parse", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), nil, "does not parse"},
		{"too large", bytes.Repeat(ca, MaxCA/len(ca)+1), nil, "more than 64 KiB"},
	} {
		got, err := CABundle(tc.in)
		switch {
		case tc.want != nil && (err != nil || !bytes.Equal(got, tc.want)):
			t.Errorf("%s: %q, %v; want the CA as it is", tc.name, got, err)
		case tc.want == nil && (!errors.Is(err, ErrNoCA) || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%s: %v, want ErrNoCA saying %q", tc.name, err, tc.why)
		}
	}
}
