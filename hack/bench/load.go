package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// loadWorkers is how many connections the load process has in flight at
// most; the rate is shared among them.
const loadWorkers = 4

// runLoad is the load process (the bench binary re-executed with
// -load-target): short TCP connections, each reading the node's name, spread
// round-robin over targets at about rate per second. It stops when stdin
// closes, after dur, or after maxConns connections, and prints one JSON line.
func runLoad(targetList string, rate int, dur time.Duration, maxConns int) int {
	targets := strings.Split(targetList, ",")
	if rate <= 0 || maxConns <= 0 || dur <= 0 || len(targets) == 0 {
		fmt.Fprintln(os.Stderr, "load: bad parameters")
		return 2
	}
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); halt() }()
	time.AfterFunc(dur, halt)

	var issued, failed atomic.Int64
	var mu sync.Mutex
	firstErr := ""
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range loadWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := issued.Add(1)
				if n > int64(maxConns) {
					issued.Add(-1)
					halt()
					return
				}
				// Pace: connection n starts no earlier than n*interval.
				if d := time.Until(start.Add(time.Duration(n) * interval)); d > 0 {
					select {
					case <-stop:
						issued.Add(-1)
						return
					case <-time.After(d):
					}
				}
				select {
				case <-stop:
					issued.Add(-1)
					return
				default:
				}
				addr := targets[int(n)%len(targets)]
				if _, err := lab.Probe(addr, 2*time.Second); err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == "" {
						firstErr = err.Error()
					}
					mu.Unlock()
				}
			}
		}()
		_ = w
	}
	wg.Wait()
	b, _ := json.Marshal(loadResult{Total: int(issued.Load()), Failed: int(failed.Load()), FirstErr: firstErr})
	fmt.Println(string(b))
	return 0
}
