package kubeclient

import (
	"fmt"
	"strconv"

	"k8s.io/client-go/features"
)

// How the informers read their first list (issue 29, the fresh start and
// its peak memory). client-go 0.35+ streams it by default as a watch of
// the initial events (the WatchListClient feature: one watch event per
// object, then a bookmark). At 10,000 Services x 5 endpoints
// (BenchmarkServicesScaleNew) the caches synced 0.58-0.84 s after the
// start that way, and 0.37 s with a plain list from the apiserver's watch
// cache (one protobuf response per resource), but a plain list is decoded
// whole before the informer's transform slims its first item: the start's
// peak RSS was ~11 MiB higher. So the feature stays on and the informers
// choose: the large kinds (Services, EndpointSlices) stream, every other
// informer is made from a client wrapped by PlainLists (plain.go).
// KUBE_FEATURE_WatchListClient, client-go's own switch, still decides
// when it is set: false makes every first list plain.

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
