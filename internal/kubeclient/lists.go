package kubeclient

import (
	"fmt"
	"strconv"

	"k8s.io/client-go/features"
)

// How the informers read their first list (issue 29, the fresh start and
// its peak memory). client-go 0.35+ streams it by default as a watch of
// the initial events (the WatchListClient feature: one watch event per
// object, then a bookmark, each object slimmed by the informer's transform
// as it arrives); a plain list from the apiserver's watch cache is one
// protobuf response per resource, decoded whole before the first item is
// slimmed. At 10,000 Services x 5 endpoints (BenchmarkServicesScaleNew,
// one quiet window, BENCHMARKS.md) streaming the Services and
// EndpointSlices kept the caches' phase ~30 MiB lower (68-77 against
// 102-107 MiB) but served 2.1 s after the start against 1.7-1.9, and the
// first pass's held collector (memlimit.HoldStart) then grew the heap to
// the same 106-111 MiB: the whole run's peak did not move (rss30b's
// quiet run, with the hold made tighter after streamed lists: 129.7
// against 134.9 MiB, served 1.1 s later). So the
// controller asks for plain lists unless KUBE_FEATURE_WatchListClient,
// client-go's own switch, is set; when it is true, only the large kinds
// stream: every other informer is made from a client wrapped by
// PlainLists (plain.go).

// watchListEnv is client-go's environment variable for the feature.
const watchListEnv = "KUBE_FEATURE_" + string(features.WatchListClient)

// settable are client-go's default gates (read from the environment),
// which take a value set in the program over the environment's.
type settable interface {
	Set(features.Feature, bool) error
}

// WatchListFromEnv sets client-go's WatchListClient for this process from
// getenv (the command's environment): off unless watchListEnv is set,
// else its value. It sets the one feature on client-go's own gates,
// never replaces them (a replacement after something read the gates logs
// an error, and `run` may be embedded after other client-go use: the
// demo), so it may come anywhere before the informers start; gates an
// embedding program installed are its own and left as they are. Each
// call decides anew (the last one wins in a process).
func WatchListFromEnv(getenv func(string) string) error {
	g, ok := features.FeatureGates().(settable)
	if !ok {
		return nil
	}
	return watchListFromEnv(getenv, g)
}

// watchListFromEnv sets WatchListClient on g from getenv.
func watchListFromEnv(getenv func(string) string, g settable) error {
	on := false
	if v := getenv(watchListEnv); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q: want true or false", watchListEnv, v)
		}
		on = b
	}
	return g.Set(features.WatchListClient, on)
}

// Streamed is whether the large kinds' informers stream their first
// list: client-go's WatchListClient as set for this process
// (WatchListFromEnv, or an embedding program's gates).
func Streamed() bool {
	return features.FeatureGates().Enabled(features.WatchListClient)
}
