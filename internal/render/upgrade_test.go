package render

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// The configs older releases wrote, kept under testdata/upgrade/<commit>/
// (the golden files of that commit, written by its render package), must
// each be the same structure as what this release renders for the same
// input, in the current rendering or a Legacy one: a controller upgraded
// while HAProxy runs such a config then applies the same model without a
// reload (internal/driver/runtimeapi upgrade.go). A Legacy rendering must
// reproduce the older text byte for byte, so that the files the driver
// persists meanwhile are the older release's.
//
// A change of rendering that fails this test reloads HAProxy on the first
// pass after an upgrade from that release. Either it needs no reload to
// be correct, and it gets a Legacy flag (upgrade.go) that writes the older
// text; or it does, and docs/reliability.md ("Upgrading the controller")
// says which releases it reloads, and their fixtures go.
func TestOlderReleases(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "upgrade", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures of older releases under testdata/upgrade (%v)", err)
	}
	inputs := goldenInputs()
	description := regexp.MustCompile(`(?m)^\tdescription ` + DescriptionPrefix + `([0-9a-f]+)$`)
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.cfg"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no fixtures (%v)", dir, err)
		}
		for _, f := range files {
			name := filepath.Base(dir) + "/" + filepath.Base(f)
			t.Run(name, func(t *testing.T) {
				in, ok := inputs[filepath.Base(f)]
				if !ok {
					t.Fatalf("no golden input of that name in goldenInputs")
				}
				older, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				m := description.FindSubmatch(older)
				if m == nil {
					t.Fatal("no structure hash in the fixture")
				}
				running := string(m[1])
				legacy, ok := MatchRendering(in.cfg, in.layout, in.opts, running)
				if !ok {
					t.Fatalf("HAProxy running this config (hash %s) would be reloaded after an upgrade: this release renders its model as %s; "+
						"add a render.Legacy flag for the change, or document the reload (see the test's comment)",
						running, StructureHash(in.cfg, in.layout, in.opts))
				}
				if legacy == 0 {
					return
				}
				o := in.opts
				o.Legacy = legacy
				if got := Config(in.cfg, in.layout, o); !bytes.Equal(got, older) {
					t.Errorf("rendering %s has the older release's hash but not its text:\n%s\nwant:\n%s", legacy, got, older)
				}
			})
		}
	}
}

// A Legacy rendering is a rendering HAProxy accepts, and only the flags
// that change something for a model change its hash.
func TestLegacyRenderings(t *testing.T) {
	in := goldenInputs()["tracked-nodecheck-http.cfg"]
	current := StructureHash(in.cfg, in.layout, in.opts)
	o := in.opts
	o.Legacy = LooseChecked
	if StructureHash(in.cfg, in.layout, o) == current {
		t.Errorf("LooseChecked does not change the hash of a backend following its nodes with the node check")
	}
	golden.HAProxyAccepts(t, Config(in.cfg, in.layout, o))
	plain := goldenInputs()["sample.cfg"]
	p := plain.opts
	p.Legacy = LooseChecked
	if StructureHash(plain.cfg, plain.layout, p) != StructureHash(plain.cfg, plain.layout, plain.opts) {
		t.Errorf("LooseChecked changes a config without backends following nodes")
	}
	if l, ok := MatchRendering(in.cfg, in.layout, in.opts, "0123456789abcdef"); ok {
		t.Errorf("MatchRendering matched a hash no rendering has, as %s", l)
	}
}
