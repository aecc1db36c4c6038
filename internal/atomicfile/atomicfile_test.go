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
		data  string
		perm  os.FileMode
		write func(string, []byte, os.FileMode) error
	}{{"one", 0o644, Write}, {"two", 0o600, Write}, {"three", 0o644, WriteUnsynced}, {"four", 0o600, WriteUnsynced}} {
		if err := tc.write(path, []byte(tc.data), tc.perm); err != nil {
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

// BenchmarkWrite: the cost of the fsync on a file the size of a pool.json
// of 10,000 spares (~0.5 MB), with and without it.
//
//	go test ./internal/atomicfile -run '^$' -bench Write -benchtime 50x
func BenchmarkWrite(b *testing.B) {
	data := make([]byte, 512<<10)
	for _, bc := range []struct {
		name  string
		write func(string, []byte, os.FileMode) error
	}{{"synced", Write}, {"unsynced", WriteUnsynced}} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "f")
			for i := 0; b.Loop(); i++ {
				data[i%len(data)]++
				if err := bc.write(path, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
