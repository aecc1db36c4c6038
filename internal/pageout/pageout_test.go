package pageout

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseMapsAndOf(t *testing.T) {
	const maps = `00400000-00402000 r--p 00000000 fd:01 1234 /usr/bin/ctl
00402000-0224c000 r-xp 00002000 fd:01 1234 /usr/bin/ctl
04537000-045d9000 rw-p 04136000 fd:01 1234 /usr/bin/ctl
045d9000-06000000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 fd:01 99 /usr/lib/libc.so.6
7f0000002000-7f0000003000 r-xp 00000000 fd:02 1234 /other/fs/same-inode
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
`
	got, err := ParseMaps(strings.NewReader(maps))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("parsed %d mappings, want 7", len(got))
	}
	tests := []struct {
		name         string
		major, minor uint32
		inode        uint64
		want         []uintptr // starts
	}{
		{"the executable's read-only mappings", 0xfd, 1, 1234, []uintptr{0x400000, 0x402000}},
		{"another file", 0xfd, 1, 99, []uintptr{0x7f0000000000}},
		{"same inode on another device", 0xfd, 2, 1234, []uintptr{0x7f0000002000}},
		{"anonymous memory is no file", 0, 0, 0, nil},
		{"a file not mapped", 0xfd, 1, 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var starts []uintptr
			for _, m := range Of(got, tt.major, tt.minor, tt.inode) {
				if m.Writable {
					t.Errorf("writable mapping %#x chosen", m.Start)
				}
				starts = append(starts, m.Start)
			}
			if len(starts) != len(tt.want) {
				t.Fatalf("got %#x, want %#x", starts, tt.want)
			}
			for i := range starts {
				if starts[i] != tt.want[i] {
					t.Fatalf("got %#x, want %#x", starts, tt.want)
				}
			}
		})
	}
}

func TestParseMapsRefusesBadLines(t *testing.T) {
	for _, line := range []string{
		"00400000 r--p 00000000 fd:01 1234 /x",          // no range
		"00400000-00300000 r--p 00000000 fd:01 1234 /x", // end before start
		"0040000g-00402000 r--p 00000000 fd:01 1234 /x", // not hex
		"00400000-00402000 r--p 00000000 fd01 1234 /x",  // no device
		"00400000-00402000 r--p 00000000 fd:01",         // short
	} {
		if _, err := ParseMaps(strings.NewReader(line + "\n")); err == nil {
			t.Errorf("%q: no error", line)
		}
	}
}

// TestExecutablePagesOut: the test binary's own file pages, resident
// after its start, are mostly gone after Executable.
func TestExecutablePagesOut(t *testing.T) {
	res, err := Executable()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Mappings == 0 || res.Bytes == 0 {
		t.Fatalf("no mapping of the executable advised: %+v", res)
	}
	if res.FileKiBBefore == 0 {
		t.Skip("no RssFile in /proc/self/status")
	}
	if res.FileKiBAfter > res.FileKiBBefore*3/4 {
		t.Fatalf("file pages %d KiB before, %d KiB after: not paged out", res.FileKiBBefore, res.FileKiBAfter)
	}
	t.Logf("%+v", res)
}

// TestFileReadAheadOff: after file, a scattered read of a mapped file
// brings in the pages read and not their neighbours. With read-ahead
// (128 KiB around a fault) and the fault-around that maps the cached
// neighbours (64 KiB), one read in each 64 KiB brings in the whole file.
func TestFileReadAheadOff(t *testing.T) {
	const size = 16 << 20
	const stride = 64 << 10 // one page read in each fault-around window
	dir := t.TempDir()
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	if sfs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is a tmpfs: its pages are not a file's to read again")
	}
	f, err := os.Create(filepath.Join(dir, "exe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{1}, size)); err != nil {
		t.Fatal(err)
	}
	// Written out and dropped from the page cache: an installed binary's
	// pages are clean, and only what processes read of it is cached.
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	sum := 0
	for i := 0; i < size; i += 4096 { // all of it resident, as a start leaves a binary
		sum += int(mem[i])
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	res, err := file(unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Mappings != 1 {
		t.Fatalf("%d mappings advised, want the file's one", res.Mappings)
	}
	before := fileKiB()
	if before == 0 {
		t.Skip("no RssFile in /proc/self/status")
	}
	touched := 0
	for i := 0; i < size; i += stride {
		sum += int(mem[i])
		touched++
	}
	grew := fileKiB() - before
	// The pages read, twice over for this test's own code faulting back
	// in, and 1 MiB of room; read-ahead on, all 16 MiB.
	if limit := int64(touched)*4*2 + 1024; grew > limit {
		t.Fatalf("%d scattered pages read: RssFile grew %d KiB, want at most %d (read-ahead not off)", touched, grew, limit)
	}
	t.Logf("%d scattered pages read: RssFile grew %d KiB (checksum %d)", touched, grew, sum)
}
