package gatewayctl

import (
	"sync"
	"unsafe"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// With several instances (driver.Instances, --instance), Apply only hands
// the model over; each instance applies it on its own. The status of a
// model is then published once every instance has applied it (Loop.
// InstanceApplied): a route is never reported Accepted, nor a listener
// Programmed, before each HAProxy serves it. While an instance is down
// the status stays at the last model all applied; traffic on the others
// is never held up by it (driver.Instances).

// modelKey names one model Compute returned: its slices' arrays, shared
// by every copy of the model (driver.Instances copies the struct).
type modelKey struct{ fe, be, udp unsafe.Pointer }

func keyOf(cfg model.Config) modelKey {
	return modelKey{unsafe.Pointer(unsafe.SliceData(cfg.Frontends)), unsafe.Pointer(unsafe.SliceData(cfg.Backends)), unsafe.Pointer(unsafe.SliceData(cfg.UDP))}
}

// maxPending bounds the results kept for instances that lag behind:
// an instance takes the newest model when it is free, so older ones are
// never applied once newer ones exist.
const maxPending = 16

type appliedBook struct {
	mu        sync.Mutex
	instances []string
	pending   []pendingResult // oldest first
	last      map[string]modelKey
	publish   func(gateway.Result)
}

type pendingResult struct {
	key  modelKey
	res  gateway.Result
	then func() // the Beside's part of the pass (nil: none)
}

func newAppliedBook(instances []string, publish func(gateway.Result)) *appliedBook {
	return &appliedBook{instances: instances, last: map[string]modelKey{}, publish: publish}
}

// computed records a result whose model was handed to the instances;
// then (nil: none) is called with its publishing.
func (b *appliedBook) computed(res gateway.Result, then func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, pendingResult{keyOf(res.Config), res, then})
	if len(b.pending) > maxPending {
		b.pending = b.pending[len(b.pending)-maxPending:]
	}
}

// applied records that instance applied cfg, and publishes the status of
// cfg's result once every instance's last applied model is cfg.
func (b *appliedBook) applied(instance string, cfg model.Config) {
	k := keyOf(cfg)
	b.mu.Lock()
	b.last[instance] = k
	for _, n := range b.instances {
		if b.last[n] != k {
			b.mu.Unlock()
			return
		}
	}
	var p *pendingResult
	for i := len(b.pending) - 1; i >= 0; i-- {
		if b.pending[i].key == k {
			p = &b.pending[i]
			b.pending = b.pending[i+1:] // older ones will never be all applied
			break
		}
	}
	b.mu.Unlock()
	if p != nil {
		b.publish(p.res)
		if p.then != nil {
			p.then()
		}
	}
}
