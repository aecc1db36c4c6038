package certs

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
)

// ErrNoCA: a CA bundle (a ConfigMap's or Secret's ca.crt) is too large,
// holds no PEM certificate, or one that does not parse.
var ErrNoCA = errors.New("no valid CA certificate")

// MaxCA bounds a CA bundle read.
const MaxCA = 64 << 10

// caError says what is wrong with a CA bundle ("holds ..."), never its
// bytes; it is ErrNoCA.
type caError string

func (e caError) Error() string        { return string(e) }
func (e caError) Is(target error) bool { return target == ErrNoCA }

// CABundle is a CA bundle's certificates checked and written again as
// PEM (no blank line, nothing but CERTIFICATE blocks: the file HAProxy
// loads as ca-file), or an ErrNoCA saying why not.
func CABundle(data []byte) ([]byte, error) {
	if len(data) > MaxCA {
		return nil, caError("holds more than 64 KiB")
	}
	rest := data
	var out []byte
	for len(rest) > 0 {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return nil, caError("holds a certificate that does not parse")
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})...)
	}
	if len(out) == 0 {
		return nil, caError("holds no PEM certificate")
	}
	return out, nil
}
