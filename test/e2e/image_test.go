package e2e

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Dockerfile's build command, run as written (output path and version
// substituted), gives a static binary that runs; the image's entrypoint is
// the binary and `run` its default command, so swapping the image of an
// older Deployment is enough.
func TestDockerfileBuildsStaticBinary(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []string{`ENTRYPOINT ["haproxy-k8s-sync"]`, `CMD ["run"]`, "USER 99:99", "AS build", "COPY --from=build"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
	m := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*)$`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("no `RUN CGO_ENABLED=0 go build` line in the Dockerfile")
	}
	bin := filepath.Join(t.TempDir(), "haproxy-k8s-sync")
	cmdline := strings.NewReplacer("${VERSION}", "v0.0.0-test", "/out/haproxy-k8s-sync", bin).Replace(m[1])
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader: not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v", libs)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.0.0-test") {
		t.Errorf("version: %v %s", err, out)
	}

	// `make image`'s builder (go-containerregistry, no daemon) puts that
	// binary into an OCI image: scratch, non-root, entrypoint and command
	// as the Dockerfile's.
	tool := filepath.Join(t.TempDir(), "build-image")
	build := exec.Command("go", "build", "-o", tool, ".")
	build.Dir = "../../hack/image"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building hack/image: %v\n%s", err, out)
	}
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	if out, err := exec.Command(tool, "-binary", bin, "-tag", "haproxy-k8s-sync:test", "-o", tarPath).CombinedOutput(); err != nil {
		t.Fatalf("build-image: %v\n%s", err, out)
	}
	out, err = exec.Command(tool, "-inspect", tarPath).Output()
	if err != nil {
		t.Fatalf("build-image -inspect: %v", err)
	}
	var img struct {
		Entrypoint, Cmd []string
		User, OS        string
		Files           map[string]int64
	}
	if err := json.Unmarshal(out, &img); err != nil {
		t.Fatal(err)
	}
	if strings.Join(img.Entrypoint, " ") != "haproxy-k8s-sync" || strings.Join(img.Cmd, " ") != "run" || img.User != "65532:65532" || img.OS != "linux" {
		t.Errorf("image config: %+v", img)
	}
	if mode, ok := img.Files["usr/local/bin/haproxy-k8s-sync"]; !ok || mode&0o111 == 0 {
		t.Errorf("the binary is not in the image, executable: %v", img.Files)
	}
}
