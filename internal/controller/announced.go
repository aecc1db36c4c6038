package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
)

// ConditionAnnounced is the type of the Service condition that says who
// announces its addresses (docs/addresses.md, "Who announces each
// address").
const ConditionAnnounced = "haproxy-k8s-sync.io/Announced"

// Reasons of ConditionAnnounced.
const (
	ReasonAnnounced    = "Announced"
	ReasonNotAnnounced = "NotAnnounced"
	// with BGP (ScopeLeader)
	ReasonAdvertised    = "Advertised"
	ReasonNotAdvertised = "NotAdvertised"
)

// announcedEvery is how often the writers of who announces look again
// besides their pokes (the Announced condition, the AddressPools'
// announcedBy).
const announcedEvery = 5 * time.Second

// Scope is what the holders an Announced writer reads can know.
type Scope int

const (
	// ScopeGroup: every host hears the group's owners (layer 2), so the
	// holders are the group's.
	ScopeGroup Scope = iota
	// ScopeLeader: the leader's own routes only, each advertised to a
	// router whose session is Established (BGP: the speakers do not hear
	// each other); the other hosts announce on their own.
	ScopeLeader
)

// leaderNote ends a ScopeLeader condition's message.
const leaderNote = " (the leader's own BGP sessions; every healthy host announces on its own)"

// AnnouncedCondition is, pure, the condition of a Service whose
// addresses are addrs, from who announces each (holders): True when
// every address has a holder; the message names them, address by
// address ("nobody" for one without). With ScopeLeader the holders are
// the leader's routes advertised to a router: True (Advertised) when the
// leader advertises every address, False (NotAdvertised) naming those it
// does not; never a claim about the other hosts.
func AnnouncedCondition(addrs []netip.Addr, holders announce.Holders, generation int64, scope Scope) metav1.Condition {
	c := metav1.Condition{Type: ConditionAnnounced, Status: metav1.ConditionTrue, Reason: ReasonAnnounced, ObservedGeneration: generation}
	missing := ReasonNotAnnounced
	if scope == ScopeLeader {
		c.Reason, missing = ReasonAdvertised, ReasonNotAdvertised
	}
	parts := make([]string, 0, len(addrs))
	for _, a := range addrs {
		who := strings.Join(holders[a], ", ")
		if who == "" {
			c.Status, c.Reason = metav1.ConditionFalse, missing
		}
		switch {
		case scope == ScopeLeader && who == "":
			parts = append(parts, a.String()+" not advertised to any router by the leader")
		case scope == ScopeLeader:
			parts = append(parts, a.String()+" advertised by "+who)
		case who == "":
			parts = append(parts, a.String()+" by nobody")
		default:
			parts = append(parts, a.String()+" by "+who)
		}
	}
	c.Message = strings.Join(parts, "; ")
	if scope == ScopeLeader {
		c.Message += leaderNote
	}
	return c
}

// Announced writes ConditionAnnounced on each Service the Publisher
// publishes addresses for (leader only, as the Publisher: the same
// services/status patch, a strategic merge by condition type that leaves
// the others' conditions alone), from holders (the layer 2 announcer's
// view of the group). Poke it when the holders change; it also looks
// every few seconds.
type Announced struct {
	client  kubernetes.Interface
	lister  ServiceLister
	pub     *Publisher
	holders func(context.Context) announce.Holders
	scope   Scope
	wake    loop.Wake
	log     *slog.Logger
}

// NewAnnounced returns the writer of holders read in scope; nil without
// a Publisher or holders.
func NewAnnounced(client kubernetes.Interface, lister ServiceLister, pub *Publisher, holders func(context.Context) announce.Holders, scope Scope, log *slog.Logger) *Announced {
	if pub == nil || holders == nil {
		return nil
	}
	return &Announced{client: client, lister: lister, pub: pub, holders: holders, scope: scope, wake: loop.NewWake(), log: log}
}

// Poke asks for a look at every Service (who announces changed).
func (a *Announced) Poke() {
	if a != nil {
		a.wake.Poke()
	}
}

// Run writes until ctx ends (under leader election, while leading).
func (a *Announced) Run(ctx context.Context) {
	if a == nil {
		return
	}
	loop.Writers[types.NamespacedName]{
		Name: "haproxy-k8s-sync-announced", Workers: 2, Wake: a.wake, Every: announcedEvery,
		Enqueue: func(q workqueue.TypedRateLimitingInterface[types.NamespacedName]) {
			holders := a.holders(ctx)
			for _, k := range a.pub.published() {
				if s, ok := a.lister.Service(k.Namespace, k.Name); ok {
					if _, write := a.desired(s, holders); write {
						q.Add(k)
					}
				}
			}
		},
		Write: func(ctx context.Context, k types.NamespacedName) error { return a.write(ctx, k, a.holders(ctx)) },
		OnError: func(k types.NamespacedName, err error, retries int) {
			a.log.Warn("could not write the Announced condition; will retry", "service", k.String(), "err", err, "retries", retries)
		},
	}.Run(ctx)
}

// desired is s's condition and whether it differs from the one it has
// (the transition time aside).
func (a *Announced) desired(s *corev1.Service, holders announce.Holders) (metav1.Condition, bool) {
	addrs := a.pub.addressesOf(s)
	if len(addrs) == 0 {
		return metav1.Condition{}, false
	}
	want := AnnouncedCondition(addrs, holders, s.Generation, a.scope)
	for _, c := range s.Status.Conditions {
		if c.Type == want.Type {
			if c.Status == want.Status {
				want.LastTransitionTime = c.LastTransitionTime
			}
			return want, c.Status != want.Status || c.Reason != want.Reason || c.Message != want.Message || c.ObservedGeneration != want.ObservedGeneration
		}
	}
	return want, true
}

func (a *Announced) write(ctx context.Context, k types.NamespacedName, holders announce.Holders) error {
	s, ok := a.lister.Service(k.Namespace, k.Name)
	if !ok {
		return nil
	}
	want, needed := a.desired(s, holders)
	if !needed {
		return nil
	}
	if want.LastTransitionTime.IsZero() {
		want.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []metav1.Condition{want}}})
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().Services(k.Namespace).Patch(ctx, k.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("announced condition of %s: %w", k, err)
	}
	return nil
}
