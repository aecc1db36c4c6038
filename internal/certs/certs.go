// Package certs turns a Secret's tls.crt and tls.key into the PEM bundle
// HAProxy loads (from a file at start, through `set ssl cert` at runtime),
// checked before HAProxy sees it. It is pure: bytes in, a Bundle or a
// classified error out.
//
// The bundle is written anew from the parsed blocks: the leaf certificate
// first, then its intermediates in chain order, then the key as PKCS#8,
// each block in Go's canonical PEM (LF line ends, 64 columns, no headers,
// no blank line anywhere). The Runtime API ends a payload at its first
// empty line, so a bundle with one between two blocks (or a CRLF one)
// would lose its intermediate silently on `set ssl cert`; this one cannot.
//
// Nothing here logs or formats key material: errors name what is wrong,
// never the bytes, and Bundle prints as its names.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The classes of a refused certificate (errors.Is).
var (
	// ErrInvalid: the PEM does not parse, holds no certificate or no
	// key, or too many blocks.
	ErrInvalid = errors.New("invalid certificate or key")
	// ErrKeyMismatch: no certificate of tls.crt belongs to the key.
	ErrKeyMismatch = errors.New("the key does not belong to the certificate")
	// ErrUnsupportedKey: a key type HAProxy is not given (DSA, encrypted
	// keys, RSA below 2048 bits).
	ErrUnsupportedKey = errors.New("unsupported key")
	// ErrNotYetValid: the leaf's NotBefore is further ahead than ClockSkew.
	ErrNotYetValid = errors.New("certificate not valid yet")
	// ErrTooLarge: the bundle would not fit one Runtime API payload.
	ErrTooLarge = errors.New("certificate bundle too large")
)

// MaxBundle bounds a bundle's size: the Runtime API takes a command and
// its payload in one buffer of tune.bufsize (16 kB by default), and the
// command line takes some of it. Four RSA-4096 certificates and their key
// fit.
const MaxBundle = 14 << 10

// maxBlocks bounds the PEM blocks read from a Secret.
const maxBlocks = 16

// minRSABits is the smallest RSA key accepted.
const minRSABits = 2048

// ClockSkew is how far ahead of this host's clock a leaf's NotBefore may
// be: the issuer's clock may run ahead of ours (a certificate made "now"
// elsewhere), and its clients' with it.
const ClockSkew = 5 * time.Minute

// Bundle is a checked certificate and key as HAProxy loads them.
type Bundle struct {
	// PEM is the leaf, its intermediates in chain order, and the key
	// (PKCS#8), with no blank line and LF line ends.
	PEM []byte
	// Names are the names the leaf is for, as SNI filters: its DNS
	// subject alternative names, lower case, or its common name when it
	// has none; only names model.ValidSNI takes (no IP addresses).
	Names []string
	// KeyType is "RSA", "ECDSA" or "Ed25519".
	KeyType   string
	NotBefore time.Time
	NotAfter  time.Time
	// Chain is how many certificates PEM holds (the leaf and its
	// intermediates); Dropped how many of tls.crt's were left out
	// (certificates that are not in the leaf's chain).
	Chain, Dropped int
}

// Expired reports whether the leaf is past its NotAfter at now.
func (b Bundle) Expired(now time.Time) bool { return now.After(b.NotAfter) }

// String names the bundle; never its key.
func (b Bundle) String() string {
	return fmt.Sprintf("%s certificate for %s (chain %d, until %s)", b.KeyType, strings.Join(b.Names, ","),
		b.Chain, b.NotAfter.UTC().Format(time.RFC3339))
}

// LogValue keeps the key out of logs.
func (b Bundle) LogValue() slog.Value {
	return slog.GroupValue(slog.String("names", strings.Join(b.Names, ",")), slog.String("key", b.KeyType),
		slog.Int("chain", b.Chain), slog.Time("not_after", b.NotAfter))
}

// Parse checks certPEM (tls.crt: the leaf and its intermediates, in any
// order, blank lines, CRLF and text around blocks allowed) and keyPEM
// (tls.key: one unencrypted key, PKCS#1, SEC 1 or PKCS#8) and returns the
// bundle. The leaf is the certificate whose public key is the key's; its
// chain follows issuers through the other certificates (a root among
// them is kept, unrelated certificates are dropped). A leaf whose
// NotBefore is after now by more than ClockSkew is refused
// (ErrNotYetValid: the last good one keeps serving until it is valid);
// an expired one is returned, for the caller to warn about (Expired):
// serving it is no worse than keeping an older one.
func Parse(certPEM, keyPEM []byte, now time.Time) (Bundle, error) {
	certBlocks, err := blocks(certPEM, "tls.crt")
	if err != nil {
		return Bundle{}, err
	}
	var chain []*x509.Certificate
	for _, b := range certBlocks {
		if b.Type != "CERTIFICATE" {
			continue // a key beside the certificate is read from tls.key only
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return Bundle{}, fmt.Errorf("%w: tls.crt: a certificate does not parse: %w", ErrInvalid, err)
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return Bundle{}, fmt.Errorf("%w: tls.crt holds no CERTIFICATE block", ErrInvalid)
	}
	key, keyType, err := parseKey(keyPEM)
	if err != nil {
		return Bundle{}, err
	}
	leaf := -1
	for i, c := range chain {
		if samePublicKey(c.PublicKey, key.Public()) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return Bundle{}, fmt.Errorf("%w: no certificate of tls.crt has the public key of tls.key", ErrKeyMismatch)
	}
	ordered := order(chain, leaf)
	l := ordered[0]
	if now.Add(ClockSkew).Before(l.NotBefore) {
		return Bundle{}, fmt.Errorf("%w: not before %s", ErrNotYetValid, l.NotBefore.UTC().Format(time.RFC3339))
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Bundle{}, fmt.Errorf("%w: %s key: %w", ErrUnsupportedKey, keyType, err)
	}
	var out bytes.Buffer
	for _, c := range ordered {
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	_ = pem.Encode(&out, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if out.Len() > MaxBundle {
		return Bundle{}, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, out.Len(), MaxBundle)
	}
	return Bundle{PEM: out.Bytes(), Names: Names(l), KeyType: keyType, NotBefore: l.NotBefore, NotAfter: l.NotAfter,
		Chain: len(ordered), Dropped: len(chain) - len(ordered)}, nil
}

// blocks reads every PEM block of data, which must hold at least one.
func blocks(data []byte, what string) ([]*pem.Block, error) {
	// CRLF ends, and spaces or tabs at the end of lines, keep pem.Decode
	// from seeing a block's end line.
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	var clean bytes.Buffer
	for line := range bytes.Lines(data) {
		clean.Write(bytes.TrimRight(line, " \t\r\n"))
		clean.WriteByte('\n')
	}
	rest := clean.Bytes()
	var out []*pem.Block
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if len(out) == maxBlocks {
			return nil, fmt.Errorf("%w: %s holds more than %d PEM blocks", ErrInvalid, what, maxBlocks)
		}
		if len(b.Headers) > 0 {
			return nil, fmt.Errorf("%w: %s: a %s block has headers (an encrypted key?)", ErrUnsupportedKey, what, b.Type)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s holds no PEM block", ErrInvalid, what)
	}
	return out, nil
}

// parseKey reads the one private key of keyPEM.
func parseKey(keyPEM []byte) (crypto.Signer, string, error) {
	bs, err := blocks(keyPEM, "tls.key")
	if err != nil {
		return nil, "", err
	}
	var found []*pem.Block
	for _, b := range bs {
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		return nil, "", fmt.Errorf("%w: tls.key holds %d private keys, want 1", ErrInvalid, len(found))
	}
	b := found[0]
	var k any
	switch b.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		return nil, "", fmt.Errorf("%w: tls.key: a %s block", ErrUnsupportedKey, b.Type)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: tls.key: the %s does not parse", ErrInvalid, b.Type)
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < minRSABits {
			return nil, "", fmt.Errorf("%w: RSA key of %d bits, at least %d", ErrUnsupportedKey, k.N.BitLen(), minRSABits)
		}
		return k, "RSA", nil
	case *ecdsa.PrivateKey:
		return k, "ECDSA", nil
	case ed25519.PrivateKey:
		return k, "Ed25519", nil
	}
	return nil, "", fmt.Errorf("%w: tls.key: a %T", ErrUnsupportedKey, k)
}

// samePublicKey compares two public keys.
func samePublicKey(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// order is the chain of chain[leaf]: the leaf, then each certificate's
// issuer among the others (its subject is the issuer, its key signed it),
// until a self-signed one or none is found.
func order(chain []*x509.Certificate, leaf int) []*x509.Certificate {
	used := make([]bool, len(chain))
	used[leaf] = true
	out := []*x509.Certificate{chain[leaf]}
	for cur := chain[leaf]; !bytes.Equal(cur.RawIssuer, cur.RawSubject) || cur.CheckSignatureFrom(cur) != nil; {
		next := -1
		for i, c := range chain {
			if !used[i] && bytes.Equal(c.RawSubject, cur.RawIssuer) && cur.CheckSignatureFrom(c) == nil {
				next = i
				break
			}
		}
		if next < 0 {
			break
		}
		used[next] = true
		cur = chain[next]
		out = append(out, cur)
	}
	return out
}

// Names are the SNI names of a certificate: its DNS names, or its common
// name when it has none, lower case, deduplicated, those model.ValidSNI
// takes only.
func Names(c *x509.Certificate) []string {
	src := c.DNSNames
	if len(src) == 0 && c.Subject.CommonName != "" {
		src = []string{c.Subject.CommonName}
	}
	var out []string
	seen := make(map[string]bool, len(src))
	for _, n := range src {
		n = strings.ToLower(strings.TrimSuffix(n, "."))
		if !seen[n] && model.ValidSNI(n) {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
