package apiserverlb

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
)

// State is the last list applied, kept on disk so that a controller
// restarting while the API is unreachable serves the same servers.
type State struct {
	Source  string    `json:"source"`
	Servers []string  `json:"servers"`
	Applied time.Time `json:"applied"`
}

// LoadState reads the state file. A missing file is an empty Choice; a
// file that does not parse, or holds an invalid server, is an error (the
// caller logs it and starts from its bootstrap list).
func LoadState(path string) (Choice, error) {
	if path == "" {
		return Choice{}, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Choice{}, nil
	}
	if err != nil {
		return Choice{}, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return Choice{}, fmt.Errorf("state file %s: %w", path, err)
	}
	var out []netip.AddrPort
	for _, s := range st.Servers {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return Choice{}, fmt.Errorf("state file %s: %w", path, err)
		}
		if ap, err = ParseServer(ap.String(), ap.Port()); err != nil {
			return Choice{}, fmt.Errorf("state file %s: %w", path, err)
		}
		out = append(out, ap)
	}
	if len(out) > maxServers {
		return Choice{}, fmt.Errorf("state file %s: %d servers", path, len(out))
	}
	return Choice{Source: st.Source, Servers: normalize(out)}, nil
}

// SaveState writes the state file atomically (temporary file, fsync,
// rename).
func SaveState(path string, c Choice, now time.Time) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(State{Source: c.Source, Servers: FormatServers(c.Servers), Applied: now.UTC()}, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'), 0o644)
}

// WriteClientPEM joins a client certificate and its key into one PEM
// file, as HAProxy's crt wants it, after checking that they are a pair.
// The file is private (0600): it holds the key.
func WriteClientPEM(certFile, keyFile, dest string) error {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		// Not %v of the key's content: only the error, which names no secret.
		return fmt.Errorf("%w client certificate %s and key %s: %v", ErrInvalid, certFile, keyFile, err)
	}
	both := append(append([]byte{}, cert...), '\n')
	return writeAtomic(dest, append(both, key...), 0o600)
}

// writeAtomic replaces path with data, its directory created if missing.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}
