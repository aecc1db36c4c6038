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
// slimmed. The controller streams the large kinds' (Services and
// EndpointSlices: every other informer is made from a client wrapped by
// PlainLists, plain.go) unless KUBE_FEATURE_WatchListClient, client-go's
// own switch, says false. At 10,000 Services x 5 endpoints
// (BenchmarkServicesScaleNew, four runs each way in one world,
// BENCHMARKS.md) plain lists made the whole run's peak while they were
// decoded (116-122 MiB: ~90 MiB of the process's own memory beside ~29 MiB
// of the executable's pages the start-up touched); streamed, that phase
// stayed under 70 MiB and the peak moved to the burst of new Services
// (105-114 MiB, 10 MiB lower on average). The cost is the start's: the
// streamed lists took ~0.35 s longer and the first pass, held tighter
// after them (memlimit.HoldStart), ~0.15 s longer, ~0.55 s until HAProxy's
// reload (served ~0.9 s later on average, the reload itself varying by
// more). A plain list, before 2026-12-02 the default, is one variable
// away.

// watchListEnv is client-go's environment variable for the feature.
const watchListEnv = "KUBE_FEATURE_" + string(features.WatchListClient)

// settable are client-go's default gates (read from the environment),
// which take a value set in the program over the environment's.
type settable interface {
	Set(features.Feature, bool) error
}

// WatchListFromEnv sets client-go's WatchListClient for this process from
// getenv (the command's environment): on unless watchListEnv is set,
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
	on := true
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
