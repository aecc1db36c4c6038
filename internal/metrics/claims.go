package metrics

import "github.com/prometheus/client_golang/prometheus"

// Operations on an address claim (label "operation") and their results
// (label "result"): internal/claims' writes.
const (
	ClaimCreate = "create" // an address claimed for an object
	ClaimDelete = "delete" // a claim released (includes the consistent read before releasing the claim of an object never seen)

	ClaimCreated  = "created"  // create: the IPAddress was made
	ClaimTaken    = "taken"    // create: AlreadyExists, claimed by another object first
	ClaimReleased = "released" // delete: the IPAddress was deleted
	ClaimGone     = "gone"     // delete: already gone, or another claim now (NotFound, Conflict)
	ClaimFailed   = "failed"   // either: the write (or lookup) failed; retried with backoff
)

// Claims records the address claims' writer (internal/claims). Methods
// of a nil *Claims do nothing.
type Claims struct {
	held   prometheus.Gauge
	writes *prometheus.CounterVec
}

// Claims returns the recorder of the address claims; its series exist
// from the first call (every operation and result at zero). Call it once.
func (r *Registry) Claims() *Claims {
	c := &Claims{
		held: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "address_claims",
			Help: "Address claims (IPAddresses labelled managed-by haproxy-k8s-sync.io, of every object) the leader's last claim plan read; 0 on a replica that does not lead."}),
		writes: counter("address_claim_writes_total", "Writes of address claims, by operation (create, delete) and result (created, taken, released, gone, failed).", "operation", "result"),
	}
	for _, s := range [][2]string{{ClaimCreate, ClaimCreated}, {ClaimCreate, ClaimTaken}, {ClaimCreate, ClaimFailed},
		{ClaimDelete, ClaimReleased}, {ClaimDelete, ClaimGone}, {ClaimDelete, ClaimFailed}} {
		c.writes.WithLabelValues(s[0], s[1])
	}
	r.reg.MustRegister(c.held, c.writes)
	return c
}

// Held sets the number of claims the last plan read.
func (c *Claims) Held(n int) {
	if c != nil {
		c.held.Set(float64(n))
	}
}

// Write counts one write of a claim.
func (c *Claims) Write(operation, result string) {
	if c != nil {
		c.writes.WithLabelValues(operation, result).Inc()
	}
}
