package render

import (
	"slices"
	"strings"
	"testing"
)

func TestScanConfig(t *testing.T) {
	cfg := "# generated\nglobal\n\tdescription hks:abc\n\ndefaults\n\tmode tcp\nfrontend fe_a\n\tbind :80\n  # indented comment\nbackend be_a\n\tserver s1 192.0.2.1:80\n"
	var got []string
	err := ScanConfig(strings.NewReader(cfg), func(section, name string, f []string) {
		got = append(got, section+"/"+name+": "+strings.Join(f, " "))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"global/: global",
		"global/: description hks:abc",
		"defaults/: defaults",
		"defaults/: mode tcp",
		"frontend/fe_a: frontend fe_a",
		"frontend/fe_a: bind :80",
		"backend/be_a: backend be_a",
		"backend/be_a: server s1 192.0.2.1:80",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
