// Package pageout hands the kernel back the pages of the running
// executable that the process's start touched and its work does not use.
//
// A Go binary's start runs every linked package's init (several hundred
// here: API schemes, protobuf descriptors, GoBGP's), which touches pages
// all over its text and read-only data; the kernel maps them with their
// neighbours (fault-around), and they stay resident, counted in the
// process's RSS, for as long as it runs: about 40 MiB of the controller's
// file pages before it reads a single object, of which about 17 MiB is
// what an idle controller touches again (BENCHMARKS.md, issue 29).
// Executable asks the kernel (MADV_PAGEOUT, Linux 5.4) to reclaim the
// executable's read-only mappings once; what the process needs later
// faults back in.
//
// It also turns read-ahead off on them (MADV_RANDOM): a fault on a page
// no longer in the page cache then reads that page alone, not the
// 128 KiB around it, and the fault-around that maps a faulting page's
// neighbours (64 KiB) finds none of them cached. The controller's later
// reads of its read-only data are scattered (the collector's type data,
// the function tables of stack scans and tracebacks), so each used to
// bring up to 16 pages for one: .rodata and .gopclntab 14.5-15 MiB
// present at the end of a run, 4 MiB with read-ahead off, RssFile 22-24
// -> 11-12 MiB (BENCHMARKS.md, issue 29). The code is not helped: the
// kernel (6.18 here) keeps an executable mapping's pages cached through
// a page-out and reads ahead on it whatever the advice (.text 6.6 MiB
// either way). A page a neighbour's fault would have brought costs a
// read of its own when it is touched: the first pass of a kind the
// process has not run before is a few reads slower.
package pageout

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrUnsupported: the kernel has no MADV_PAGEOUT (before Linux 5.4), or
// there is no /proc.
var ErrUnsupported = errors.New("paging out not supported")

// Mapping is one address range of /proc/self/maps.
type Mapping struct {
	Start, End   uintptr
	Writable     bool
	Major, Minor uint32
	Inode        uint64
}

// Result is what Executable did: the mappings advised, their size, and
// the process's file pages (RssFile, KiB) before and after.
type Result struct {
	Mappings                    int
	Bytes                       int64
	FileKiBBefore, FileKiBAfter int64
}

// Executable pages out the read-only mappings of the running executable
// and turns read-ahead off on them.
func Executable() (Result, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	return file(unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
}

// file is Executable for the file with that device and inode.
func file(major, minor uint32, inode uint64) (Result, error) {
	var res Result
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return res, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	maps, err := ParseMaps(f)
	f.Close()
	if err != nil {
		return res, err
	}
	res.FileKiBBefore = fileKiB()
	for _, m := range Of(maps, major, minor, inode) {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.Start, m.End-m.Start, unix.MADV_PAGEOUT); e != 0 {
			if e == unix.EINVAL || e == unix.ENOSYS {
				return res, fmt.Errorf("%w: madvise: %v", ErrUnsupported, e)
			}
			return res, fmt.Errorf("madvise %#x-%#x: %w", m.Start, m.End, e)
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.Start, m.End-m.Start, unix.MADV_RANDOM); e != 0 {
			return res, fmt.Errorf("madvise %#x-%#x random: %w", m.Start, m.End, e)
		}
		res.Mappings++
		res.Bytes += int64(m.End - m.Start)
	}
	res.FileKiBAfter = fileKiB()
	return res, nil
}

// Of is the read-only mappings of the file (device major:minor, inode).
func Of(maps []Mapping, major, minor uint32, inode uint64) []Mapping {
	var out []Mapping
	for _, m := range maps {
		if !m.Writable && m.Inode == inode && m.Major == major && m.Minor == minor && inode != 0 {
			out = append(out, m)
		}
	}
	return out
}

// ParseMaps reads the lines of a /proc/PID/maps file ("start-end perms
// offset major:minor inode [path]").
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			return nil, fmt.Errorf("maps: short line %q", sc.Text())
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		maj, mnr, ok2 := strings.Cut(f[3], ":")
		if !ok || !ok2 || len(f[1]) < 2 {
			return nil, fmt.Errorf("maps: bad line %q", sc.Text())
		}
		var m Mapping
		var errs [5]error
		var v [5]uint64
		v[0], errs[0] = strconv.ParseUint(lo, 16, 64)
		v[1], errs[1] = strconv.ParseUint(hi, 16, 64)
		v[2], errs[2] = strconv.ParseUint(maj, 16, 32)
		v[3], errs[3] = strconv.ParseUint(mnr, 16, 32)
		v[4], errs[4] = strconv.ParseUint(f[4], 10, 64)
		if err := errors.Join(errs[:]...); err != nil || v[1] < v[0] {
			return nil, fmt.Errorf("maps: bad line %q", sc.Text())
		}
		m.Start, m.End, m.Major, m.Minor, m.Inode = uintptr(v[0]), uintptr(v[1]), uint32(v[2]), uint32(v[3]), v[4]
		m.Writable = f[1][1] == 'w'
		out = append(out, m)
	}
	return out, sc.Err()
}

// fileKiB is the process's RssFile (KiB), 0 when unknown.
func fileKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
