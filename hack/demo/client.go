package main

import (
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

func kubeClient(s *kubeapi.Server) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(s.Config)
}
