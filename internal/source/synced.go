package source

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// syncPoll is how often a start asks whether every cache synced.
// client-go's cache.WaitForCacheSync asks every 100 ms: the first pass of
// a start waited up to that long after the last list ended (115 ms at
// 10,000 Services, loaded: BENCHMARKS.md, issue 29). Asking costs a few
// atomic loads.
const syncPoll = 5 * time.Millisecond

// WaitSynced asks synced at once and then every syncPoll until it says
// true (true) or ctx ends (false).
func WaitSynced(ctx context.Context, synced func() bool) bool {
	err := wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) {
		return synced(), nil
	})
	return err == nil
}
