package conformance

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/utils/suite"
)

// failedTests collects the suite's failed tests (its Hook, called as
// each test ends) for TestConformance to name at its end, in lines of
// this file: go test prints a failed subtest's own messages without -v
// too, but from the suite's files (not *_test.go), far up a long log;
// the summary names each failure last, where a CI log's tail and
// hack/test.sh's failure lines (a test file's lines around "--- FAIL")
// show it.
type failedTests struct {
	mu   sync.Mutex
	list []failedTest
}

type failedTest struct {
	name, description string
	features          []string
}

// hook is the suite's Hook: it records test when t failed.
func (f *failedTests) hook(t *testing.T, test suite.ConformanceTest, _ *suite.ConformanceTestSuite) {
	if !t.Failed() {
		return
	}
	// The whole name: the suite runs once per HAProxy binary, each run
	// a subtest named for the version (conformance_test.go).
	ft := failedTest{name: t.Name(), description: test.Description}
	for _, n := range test.Features {
		ft.features = append(ft.features, string(n))
	}
	f.mu.Lock()
	f.list = append(f.list, ft)
	f.mu.Unlock()
}

// lines is the summary: nothing when no test failed; else how many and
// which, then one line per failed test with its description and
// features, in the order they ended.
func (f *failedTests) lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) == 0 {
		return nil
	}
	names := make([]string, len(f.list))
	for i, ft := range f.list {
		names[i] = ft.name
	}
	out := []string{fmt.Sprintf("conformance: %d test(s) failed: %s (each one's messages are in its own --- FAIL block above)",
		len(f.list), strings.Join(names, ", "))}
	for _, ft := range f.list {
		line := "conformance: FAILED " + ft.name + ": " + ft.description
		if len(ft.features) > 0 {
			line += " (features: " + strings.Join(ft.features, ", ") + ")"
		}
		out = append(out, line)
	}
	return out
}

func TestFailedTestsSummary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failed []failedTest
		want   []string
	}{
		{"none failed", nil, nil},
		{"two failed, in the order they ended", []failedTest{
			{name: "TestConformance/2.6.12/HTTPRouteRetry", description: "retries", features: []string{"Gateway", "HTTPRouteRetry"}},
			{name: "TestConformance/3.0.11/TLSRouteSimpleSameNamespace", description: "a TLSRoute"},
		}, []string{
			"conformance: 2 test(s) failed: TestConformance/2.6.12/HTTPRouteRetry, TestConformance/3.0.11/TLSRouteSimpleSameNamespace (each one's messages are in its own --- FAIL block above)",
			"conformance: FAILED TestConformance/2.6.12/HTTPRouteRetry: retries (features: Gateway, HTTPRouteRetry)",
			"conformance: FAILED TestConformance/3.0.11/TLSRouteSimpleSameNamespace: a TLSRoute",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &failedTests{list: tc.failed}
			if got := f.lines(); !slices.Equal(got, tc.want) {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	// A test that passed is not recorded.
	f := &failedTests{}
	t.Run("passing", func(t *testing.T) { f.hook(t, suite.ConformanceTest{ShortName: "X"}, nil) })
	if got := f.lines(); got != nil {
		t.Errorf("a passing test recorded: %v", got)
	}
}
