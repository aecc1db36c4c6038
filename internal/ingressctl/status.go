package ingressctl

import (
	"context"
	"fmt"
	"slices"

	netv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// want is the status.loadBalancer.ingress ing should carry, and whether
// it differs from what it carries. A served Ingress lists the addresses
// of the model that runs; one we no longer serve loses what we wrote
// (only when it lists nothing but our addresses: another controller's
// status is left alone).
func (s *Server) want(ing *netv1.Ingress, ours []string) ([]netv1.IngressLoadBalancerIngress, bool) {
	s.mu.Lock()
	ips, served := s.applied[ingress.Key{Namespace: ing.Namespace, Name: ing.Name}]
	s.mu.Unlock()
	have := ing.Status.LoadBalancer.Ingress
	if !served {
		if len(have) == 0 || slices.ContainsFunc(have, func(l netv1.IngressLoadBalancerIngress) bool {
			return l.Hostname != "" || len(l.Ports) > 0 || !slices.Contains(ours, l.IP)
		}) {
			return nil, false
		}
		return nil, true
	}
	var want []netv1.IngressLoadBalancerIngress
	for _, ip := range ips {
		want = append(want, netv1.IngressLoadBalancerIngress{IP: ip})
	}
	same := len(have) == len(want) && !slices.ContainsFunc(have, func(l netv1.IngressLoadBalancerIngress) bool {
		return l.Hostname != "" || len(l.Ports) > 0 || !slices.Contains(ips, l.IP)
	})
	return want, !same
}

// ours are our addresses as status lists them (Options.Ingress.Addresses,
// and the pool addresses the class was served on).
func (s *Server) ours() []string {
	var out []string
	for _, a := range s.opts.Ingress.Addresses {
		out = append(out, a.String())
	}
	s.mu.Lock()
	out = append(out, s.poolAddrs...)
	s.mu.Unlock()
	return out
}

// write updates one Ingress's status when it differs, naming the cached
// resourceVersion (an Ingress changed meanwhile is retried).
func (s *Server) write(ctx context.Context, k ingress.Key) error {
	ing, ok := s.src.IngressObject(k.Namespace, k.Name)
	if !ok {
		return nil
	}
	want, differs := s.want(ing, s.ours())
	if !differs {
		return nil
	}
	if s.limiter != nil {
		if err := s.limiter.Wait(ctx); err != nil {
			return err
		}
	}
	c := ing.DeepCopy()
	c.Status.LoadBalancer.Ingress = want
	_, err := s.opts.Client.NetworkingV1().Ingresses(k.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status of Ingress %s: %w", k, err)
	}
	return nil
}
