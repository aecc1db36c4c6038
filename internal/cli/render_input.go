package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Render exits non-zero whenever what it writes would not be what run,
// given the same objects, serves: the checks here name the object or
// field at fault.

// refusals counts what the input held that render did not read, by class
// (each also a warning on stderr).
type refusals struct {
	unparsed, undecoded, kinds, duplicates int
	first                                  error // the class of the first, for errors.Is
}

func (r *refusals) add(e error) {
	switch {
	case errors.Is(e, objects.ErrSyntax), errors.Is(e, objects.ErrRead), errors.Is(e, objects.ErrTooDeep):
		r.unparsed++
	case errors.Is(e, objects.ErrKind):
		r.kinds++
	case errors.Is(e, objects.ErrDuplicate):
		r.duplicates++
	case errors.Is(e, objects.ErrDecode), errors.Is(e, objects.ErrVersion):
		// run never sees such an object (the apiserver would not hold
		// it): the config printed would lack what it meant.
		r.undecoded++
	default:
		return
	}
	if r.first == nil {
		r.first = e
	}
}

// err is nil when everything was read, else why the config printed lacks
// something.
func (r *refusals) err() error {
	if r.first == nil {
		return nil
	}
	var what []string
	if r.unparsed > 0 {
		what = append(what, fmt.Sprintf("%d document(s) could not be parsed", r.unparsed))
	}
	if r.undecoded > 0 {
		what = append(what, fmt.Sprintf("%d object(s) could not be decoded or are of an API version render does not read", r.undecoded))
	}
	if r.kinds > 0 {
		what = append(what, fmt.Sprintf("%d object(s) of a kind render does not read", r.kinds))
	}
	if r.duplicates > 0 {
		what = append(what, fmt.Sprintf("%d duplicate object(s)", r.duplicates))
	}
	class := objects.ErrSyntax
	for _, c := range []error{objects.ErrSyntax, objects.ErrRead, objects.ErrTooDeep, objects.ErrDecode, objects.ErrVersion, objects.ErrKind, objects.ErrDuplicate} {
		if errors.Is(r.first, c) {
			class = c
			break
		}
	}
	return fmt.Errorf("render: %w: %s (see the warnings); the config written is not what run would serve", class, strings.Join(what, ", "))
}

// loadObjects reads the objects of files ("-": stdin); problems go to
// stderr, and refused counts what could not be read or taken.
func loadObjects(files []string, stdin io.Reader, stderr io.Writer) (set objects.Set, refused refusals, err error) {
	for _, f := range files {
		var r io.Reader = stdin
		if f != "-" {
			fh, err := os.Open(f)
			if err != nil {
				return set, refused, err
			}
			defer fh.Close()
			r = fh
		}
		got, errs := objects.Load(r, f)
		errs = append(errs, set.Merge(got)...)
		for _, e := range errs {
			fmt.Fprintln(stderr, "warning:", e)
			refused.add(e)
		}
	}
	return set, refused, nil
}

// inputMatches refuses an input that would render an empty config by
// mistake: no objects at all (an empty file, the wrong file), or a
// --service that names no Service of the input.
func inputMatches(set objects.Set, opts desired.Options) error {
	if len(set.Services)+len(set.EndpointSlices)+len(set.Nodes)+len(set.AddressPools) == 0 {
		return errors.New("render: the input holds no Service, EndpointSlice, Node or AddressPool; the config would serve nothing")
	}
	if opts.Service == "" {
		return nil
	}
	for _, s := range set.Services {
		if s.Namespace+"/"+s.Name == opts.Service {
			return nil
		}
	}
	return fmt.Errorf("render: --service %s: no such Service in the input", settings.ShowName(opts.Service))
}

// haproxyMaxWords is how many words HAProxy (2.6) reads on one line of
// its configuration (MAX_LINE_ARGS); a longer line is a fatal error.
const haproxyMaxWords = 64

// fitsHAProxy refuses a config with a line HAProxy would not read whole
// (source ranges inline: more than ~57 on one rule), naming the Service.
func fitsHAProxy(cfg []byte, m model.Config, toDir bool) error {
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(cfg))
	sc.Buffer(nil, len(cfg)+1)
	for sc.Scan() {
		line := sc.Text()
		words := strings.Fields(line)
		if len(words) > 0 && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			section = strings.Join(words, " ")
		}
		if len(words) <= haproxyMaxWords {
			continue
		}
		who := section
		if name, ok := strings.CutPrefix(section, "frontend "); ok {
			for _, f := range m.Frontends {
				if f.Name == name {
					who = "Service " + settings.ShowName(f.Service) + " (" + section + ")"
				}
			}
		}
		hint := "; -o DIR writes source ranges into files beside haproxy.cfg, as run does"
		if toDir {
			hint = ""
		}
		return fmt.Errorf("render: %s: a line of %d words, more than the %d HAProxy reads (spec.loadBalancerSourceRanges inline)%s",
			who, len(words), haproxyMaxWords, hint)
	}
	return sc.Err()
}

// removeStale removes the pattern files (*.acl, *.map) of dir that are
// not in keep: those of frontends an earlier render wrote.
func removeStale(dir string, keep map[string][]byte, stderr io.Writer) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if _, ok := keep[p]; ok || e.IsDir() || !(strings.HasSuffix(p, ".acl") || strings.HasSuffix(p, ".map")) {
			continue
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "removed", p)
	}
	return nil
}
