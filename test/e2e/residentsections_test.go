package e2e

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// sectionPages is how much of one section of an executable a process
// has mapped in (its page table's present pages: what RssFile counts of
// it, the read-only sections, or RssAnon once written).
type sectionPages struct {
	Name          string
	Size, Present int64 // bytes
}

// residentSections reads which pages of exe's allocated sections pid has
// present (/proc/PID/pagemap, bit 63), section by section in address
// order. The executable must be non-PIE (go build's default on
// linux/amd64): its sections' addresses are where they are mapped.
func residentSections(pid int, exe string) ([]sectionPages, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return nil, fmt.Errorf("%s: not a fixed-address executable (%s)", exe, f.Type)
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer pm.Close()
	page := int64(os.Getpagesize())
	var out []sectionPages
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		first, last := int64(s.Addr)/page, (int64(s.Addr)+int64(s.Size)-1)/page
		buf := make([]byte, 8*(last-first+1))
		if _, err := pm.ReadAt(buf, first*8); err != nil {
			return nil, fmt.Errorf("pagemap of %s: %w", s.Name, err)
		}
		sp := sectionPages{Name: s.Name, Size: int64(s.Size)}
		for i := 0; i < len(buf); i += 8 {
			if binary.LittleEndian.Uint64(buf[i:])&(1<<63) != 0 {
				sp.Present += page
			}
		}
		out = append(out, sp)
	}
	return out, nil
}

// residentLine is residentSections as one log line: the sections with
// a MiB or more present, largest first, and the rest summed.
func residentLine(secs []sectionPages) string {
	secs = slices.Clone(secs)
	slices.SortFunc(secs, func(a, b sectionPages) int { return int(b.Present - a.Present) })
	var parts []string
	var rest, total int64
	for _, s := range secs {
		total += s.Present
		if s.Present < 1<<20 {
			rest += s.Present
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f of %.1f MiB", s.Name, float64(s.Present)/(1<<20), float64(s.Size)/(1<<20)))
	}
	parts = append(parts, fmt.Sprintf("others %.1f MiB", float64(rest)/(1<<20)))
	return fmt.Sprintf("%.1f MiB present: %s", float64(total)/(1<<20), strings.Join(parts, ", "))
}

// TestResidentSections: the test binary's own code is present where it
// runs (its .text has pages in), none beyond a section's size, and a
// section it has not touched since its start is not counted whole. It
// looks at the binary run as a program that does nothing (idle): in this
// process the tests before it in the process may have touched all of it.
func TestResidentSections(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(shutdown.Self(t, "idle"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	// It writes a line once it runs (the script has exec'd it).
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("the idle program: %q, %v", line, err)
	}
	secs, err := residentSections(cmd.Process.Pid, exe)
	if err != nil {
		if strings.Contains(err.Error(), "not a fixed-address") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	byName := map[string]sectionPages{}
	for _, s := range secs {
		if s.Present > (s.Size/int64(os.Getpagesize())+2)*int64(os.Getpagesize()) {
			t.Errorf("%s: %d bytes present of %d", s.Name, s.Present, s.Size)
		}
		byName[s.Name] = s
	}
	text := byName[".text"]
	if text.Present == 0 {
		t.Fatalf("no page of .text present: %+v", secs)
	}
	if text.Present >= text.Size {
		t.Errorf(".text wholly present (%d of %d bytes): pages not told apart", text.Present, text.Size)
	}
	t.Log(residentLine(secs))
}
