package kubeclient

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// Which informers stream their first list (issue 29, the start's peak
// memory). With client-go's WatchListClient on (the default;
// KUBE_FEATURE_WatchListClient=false turns it off, WatchListFromEnv), an informer made
// from a client reads its first list as a watch of the initial events:
// each object is decoded and put through the informer's transform as it
// arrives, instead of the whole list response decoded before the first
// item is slimmed. That lowers the caches' phase of a start by their full
// size less their slim one; it costs time, so only the large kinds
// (Services and EndpointSlices, source.New and NewGateway) take it. An
// informer made from a client wrapped here lists plainly: client-go's
// reflector asks the client whether it supports the streamed list
// (IsWatchListSemanticsUnSupported) and lists plainly when it says no.

// PlainLists is client, whose informers read their first list as a plain
// list whatever WatchListClient says.
func PlainLists(client kubernetes.Interface) kubernetes.Interface {
	if client == nil {
		return nil
	}
	return plainKube{client}
}

// PlainListsDynamic is PlainLists for a dynamic client.
func PlainListsDynamic(client dynamic.Interface) dynamic.Interface {
	if client == nil {
		return nil
	}
	return plainDynamic{client}
}

// PlainListsGateway is PlainLists for the Gateway API's client.
func PlainListsGateway(client gwclient.Interface) gwclient.Interface {
	if client == nil {
		return nil
	}
	return plainGateway{client}
}

type plainKube struct{ kubernetes.Interface }

type plainDynamic struct{ dynamic.Interface }

type plainGateway struct{ gwclient.Interface }

// IsWatchListSemanticsUnSupported is client-go's question
// (util/watchlist.DoesClientNotSupportWatchListSemantics).
func (plainKube) IsWatchListSemanticsUnSupported() bool { return true }

// IsWatchListSemanticsUnSupported: see plainKube's.
func (plainDynamic) IsWatchListSemanticsUnSupported() bool { return true }

// IsWatchListSemanticsUnSupported: see plainKube's.
func (plainGateway) IsWatchListSemanticsUnSupported() bool { return true }
