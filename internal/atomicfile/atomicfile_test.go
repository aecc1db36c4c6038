package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, tc := range []struct {
		data string
		perm os.FileMode
	}{{"one", 0o644}, {"two", 0o600}} {
		if err := Write(path, []byte(tc.data), tc.perm); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != tc.data {
			t.Fatalf("read %q, %v; want %q", b, err, tc.data)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != tc.perm {
			t.Errorf("mode %v, want %v", st.Mode().Perm(), tc.perm)
		}
	}
}

// A write that fails leaves the file as it was and no temporary file.
func TestWriteFuncFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := Write(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFunc(path, 0o644, func(f *os.File) error {
		_, _ = f.WriteString("half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("file is %q after a failed write, want %q", b, "old")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want 1 (a temporary file left?)", len(ents))
	}
}
