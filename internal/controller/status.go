package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Publisher writes the load balancer's addresses into
// .status.loadBalancer.ingress of the LoadBalancer Services it serves, so
// `kubectl get svc` shows an EXTERNAL-IP and tools waiting for it proceed.
type Publisher struct {
	Client    kubernetes.Interface
	Addresses []netip.Addr
}

// Publish patches every LoadBalancer Service in svcs whose status differs.
// svcs come from the informer cache and are not modified.
func (p *Publisher) Publish(ctx context.Context, svcs []*corev1.Service) error {
	if p == nil || len(p.Addresses) == 0 {
		return nil
	}
	want := make([]corev1.LoadBalancerIngress, len(p.Addresses))
	ips := make([]string, len(p.Addresses))
	for i, a := range p.Addresses {
		want[i] = corev1.LoadBalancerIngress{IP: a.String()}
		ips[i] = a.String()
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": want}}})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range svcs {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer || sameIPs(s.Status.LoadBalancer.Ingress, ips) {
			continue
		}
		_, err := p.Client.CoreV1().Services(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
		if err != nil {
			errs = append(errs, fmt.Errorf("publish status of %s/%s: %w", s.Namespace, s.Name, err))
		}
	}
	return errors.Join(errs...)
}

func sameIPs(ing []corev1.LoadBalancerIngress, ips []string) bool {
	got := make([]string, 0, len(ing))
	for _, i := range ing {
		got = append(got, i.IP)
	}
	return slices.Equal(got, ips)
}
