package settings

import (
	"os"
	"strings"
	"testing"
)

// TestDocs keeps docs/settings.md in step with the settings table.
func TestDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/settings.md")
	if err != nil {
		t.Skipf("docs not found: %v", err)
	}
	doc := string(b)
	d := Defaults()
	for _, f := range fields {
		for _, want := range []string{
			"`" + Prefix + f.name + "`",
			"`--" + FlagName(f.name) + "`",
			"`" + EnvName(f.name) + "`",
			"`" + f.get(&d) + "`",
		} {
			if !strings.Contains(doc, want) {
				t.Errorf("docs/settings.md lacks %s (setting %s)", want, f.name)
			}
		}
	}
	for _, want := range []string{EnabledAnnotation, LegacyEnvSendProxyV2, LegacyEnvBackendPort} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/settings.md lacks %s", want)
		}
	}
}
