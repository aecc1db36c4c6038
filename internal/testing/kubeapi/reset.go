package kubeapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// A Server's cluster can be brought back to an earlier state without
// starting a new one (docs/testing.md, "where the CPU goes": starting
// kube-apiserver and etcd is most of what an e2e test costs): Baseline
// records etcd's keys and values under /registry/, Reset deletes every
// key made since and puts back every value changed, then waits until the
// apiserver's caches have seen it. Objects go as if deleted by force (no
// finalizer runs, no Event), CustomResourceDefinitions with their
// resources, and the allocators' state (ClusterIPs, NodePorts) comes back
// with the keys that hold it. The Leases of kube-system are left as they
// are (the apiserver renews its own all the time); others go and come
// back like every object (a test's leader election starts afresh).

// registryPrefix is where the apiserver keeps its objects in etcd (its
// --etcd-prefix default).
const registryPrefix = "/registry/"

// Baseline records what Reset brings the cluster back to: the current
// keys and values under /registry/ in etcd, and the listable resources
// the apiserver serves (after a Reset it serves those again: what came
// since went with its keys).
func (s *Server) Baseline(ctx context.Context) error {
	kvs, _, err := s.etcdRange(ctx)
	if err != nil {
		return err
	}
	listable, err := s.listableResources()
	if err != nil {
		return err
	}
	s.baseline, s.listable = kvs, listable
	return nil
}

// Reset brings the cluster back to the Baseline (which it needs): keys
// made since are deleted, values changed are put back (kube-system's
// Leases excepted);
// it returns once every listable resource's cache in the apiserver is at
// etcd's revision after the writes, or an error.
func (s *Server) Reset(ctx context.Context) (deleted, restored int, err error) {
	if s.baseline == nil {
		return 0, 0, fmt.Errorf("kubeapi: Reset without a Baseline")
	}
	now, rev, err := s.etcdRange(ctx)
	if err != nil {
		return 0, 0, err
	}
	for k, v := range now {
		if !resettable(k) {
			continue
		}
		old, ok := s.baseline[k]
		switch {
		case !ok:
			rev, err = s.etcdWrite(ctx, "/v3/kv/deleterange", map[string]string{"key": b64(k)})
			deleted++
		case !bytes.Equal(old, v):
			rev, err = s.putBack(ctx, k, old)
			restored++
		}
		if err != nil {
			return deleted, restored, err
		}
	}
	for k, v := range s.baseline {
		if _, ok := now[k]; !ok && resettable(k) {
			if rev, err = s.putBack(ctx, k, v); err != nil {
				return deleted, restored, err
			}
			restored++
		}
	}
	return deleted, restored, s.cachesAt(ctx, rev)
}

// resettable is whether Reset brings key k back: every key but the
// Leases of kube-system, which the apiserver renews.
func resettable(k string) bool {
	return !strings.HasPrefix(k, registryPrefix+"leases/kube-system/")
}

// putBack writes value v under key k and returns etcd's revision after it.
func (s *Server) putBack(ctx context.Context, k string, v []byte) (int64, error) {
	return s.etcdWrite(ctx, "/v3/kv/put", map[string]string{"key": b64(k), "value": base64.StdEncoding.EncodeToString(v)})
}

// cachesAt waits until a list of every listable resource of the Baseline
// is at least at etcd revision rev: each resource's watch cache has seen
// the writes before it (a list at a resourceVersion, NotOlderThan, waits
// for that cache; the revision is the resourceVersion).
func (s *Server) cachesAt(ctx context.Context, rev int64) error {
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(s.Config))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := metav1.ListOptions{Limit: 1, ResourceVersion: strconv.FormatInt(rev, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	for _, r := range s.listable {
		// A CustomResourceDefinition of the Baseline put back may not be
		// served again yet: nothing of it to wait for.
		if _, err := dyn.Resource(r).List(ctx, opts); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("kubeapi: %s at revision %d: %w", r, rev, err)
		}
	}
	return nil
}

// listableResources are the resources the apiserver serves, in their
// preferred versions, that can be listed.
func (s *Server) listableResources() ([]schema.GroupVersionResource, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(s.Config))
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("kubeapi: discovery: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") && slices.Contains(r.Verbs, "list") {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out, nil
}

// etcdKV is a key and value as etcd's JSON gateway spells them (base64).
type etcdKV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// etcdHeader is the header of every etcd response: the revision after it.
type etcdHeader struct {
	Revision string `json:"revision"` // an int64, as JSON's gateway writes it
}

// etcdRange returns every key and value under /registry/ and etcd's
// revision.
func (s *Server) etcdRange(ctx context.Context) (map[string][]byte, int64, error) {
	var r struct {
		Header etcdHeader
		Kvs    []etcdKV
	}
	end := registryPrefix[:len(registryPrefix)-1] + string(rune(registryPrefix[len(registryPrefix)-1]+1))
	if err := s.etcdPost(ctx, "/v3/kv/range", map[string]string{"key": b64(registryPrefix), "range_end": b64(end)}, &r); err != nil {
		return nil, 0, err
	}
	out := make(map[string][]byte, len(r.Kvs))
	for _, kv := range r.Kvs {
		k, err := base64.StdEncoding.DecodeString(kv.Key)
		if err != nil {
			return nil, 0, err
		}
		v, err := base64.StdEncoding.DecodeString(kv.Value)
		if err != nil {
			return nil, 0, err
		}
		out[string(k)] = v
	}
	rev, err := strconv.ParseInt(r.Header.Revision, 10, 64)
	return out, rev, err
}

// etcdWrite posts a put or deleterange and returns the revision after it.
func (s *Server) etcdWrite(ctx context.Context, path string, body map[string]string) (int64, error) {
	var r struct{ Header etcdHeader }
	if err := s.etcdPost(ctx, path, body, &r); err != nil {
		return 0, err
	}
	return strconv.ParseInt(r.Header.Revision, 10, 64)
}

func (s *Server) etcdPost(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.EtcdURL+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kubeapi: etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kubeapi: etcd %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
