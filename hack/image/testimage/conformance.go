package main

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The images the Gateway API conformance suite (sigs.k8s.io/gateway-api/
// conformance v1.6.x) names in its base and test manifests, under exactly
// those names, so that the real-node tier runs the manifests unchanged and
// nothing is pulled (their pull policy is IfNotPresent: the image is
// present). Every echo-basic tag is the one binary built from the
// conformance module in hack/conformance/go.mod: the tags only say which
// release of the image a manifest was written against.
var (
	echoBasicImages = []string{
		"registry.k8s.io/gateway-api/echo-basic:v1.5.1",
		"registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.2",
		"registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3",
	}
	corednsImage = "registry.k8s.io/coredns/coredns:v1.12.2"
)

// buildConformance writes one docker-archive tarball with the echo-basic
// images (entrypoint /echo-basic) and the CoreDNS image (entrypoint
// /coredns; the manifest passes -conf).
func buildConformance(echoBin, corednsBin, out string) error {
	if echoBin == "" || corednsBin == "" || out == "" {
		return fmt.Errorf("-echo-basic, -coredns and -o are required together")
	}
	images := map[name.Reference]v1.Image{}
	for _, b := range []struct {
		bin, name string
		refs      []string
	}{
		{echoBin, "echo-basic", echoBasicImages},
		{corednsBin, "coredns", []string{corednsImage}},
	} {
		exe, err := os.ReadFile(b.bin)
		if err != nil {
			return err
		}
		layer, err := binaryLayer(b.name, exe)
		if err != nil {
			return err
		}
		for _, ref := range b.refs {
			if err := addImage(images, ref, layer, []string{"/" + b.name}); err != nil {
				return err
			}
		}
	}
	return writeImages(images, out)
}
