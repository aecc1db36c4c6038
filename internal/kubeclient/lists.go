package kubeclient

import (
	"sync"

	"k8s.io/client-go/features"
)

// How the informers read their first list (issue 29, the fresh start).
// client-go 0.35+ streams it by default as a watch of the initial events
// (the WatchListClient feature: one watch event per object, then a
// bookmark). At 10,000 Services x 5 endpoints (BenchmarkServicesScaleNew,
// one quiet window) the caches synced 0.58-0.84 s after the start that
// way, and 0.37 s with a plain list from the apiserver's watch cache (one
// response per resource, protobuf). The controller reads three
// resources once at its start and after an outage, so it asks for plain
// lists; KUBE_FEATURE_WatchListClient, client-go's own switch, still
// decides when it is set.

// watchListEnv is client-go's environment variable for the feature.
const watchListEnv = "KUBE_FEATURE_" + string(features.WatchListClient)

var preferLists sync.Once

// PreferLists turns client-go's WatchListClient off for this process
// unless watchListEnv is set (getenv: os.Getenv), before any informer
// runs; later calls do nothing.
func PreferLists(getenv func(string) string) {
	preferLists.Do(func() {
		if getenv(watchListEnv) == "" {
			features.ReplaceFeatureGates(gatesFor(getenv, features.FeatureGates()))
		}
	})
}

// gatesFor is base with WatchListClient off, or base itself when
// watchListEnv is set.
func gatesFor(getenv func(string) string, base features.Gates) features.Gates {
	if getenv(watchListEnv) != "" {
		return base
	}
	return listGates{base}
}

// listGates are client-go's gates with WatchListClient off.
type listGates struct{ features.Gates }

func (g listGates) Enabled(f features.Feature) bool {
	if f == features.WatchListClient {
		return false
	}
	return g.Gates.Enabled(f)
}
