package desired

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// candidate is a selected Service and its "namespace/name".
type candidate struct {
	svc *corev1.Service
	key string
}

func key(s *corev1.Service) string { return s.Namespace + "/" + s.Name }

func portLabel(p corev1.ServicePort) string {
	if p.Name != "" {
		return settings.ShowName(p.Name) + " (" + strconv.Itoa(int(p.Port)) + ")"
	}
	return strconv.Itoa(int(p.Port))
}

// selected tells whether this controller takes the Service.
func selected(s *corev1.Service, opts Options) bool {
	if opts.Service != "" {
		return key(s) == opts.Service
	}
	switch s.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		if c := s.Spec.LoadBalancerClass; c != nil {
			return *c == opts.Class
		}
		return opts.ClassLess || s.Annotations[settings.EnabledAnnotation] == "true"
	case corev1.ServiceTypeNodePort:
		return s.Annotations[settings.EnabledAnnotation] == "true"
	}
	return false
}

// badOptIns are the Problems of the Services whose enabled annotation
// would decide whether they are taken but is neither "true" nor "false"
// (the grammar of every boolean setting): "True" or "yes" would otherwise
// leave a Service out without a word.
func badOptIns(svcs []*corev1.Service, opts Options) []Problem {
	if opts.Service != "" {
		return nil
	}
	var out []Problem
	for _, s := range svcs {
		v, ok := s.Annotations[settings.EnabledAnnotation]
		if !ok || v == "true" || v == "false" {
			continue
		}
		decides := s.Spec.Type == corev1.ServiceTypeNodePort ||
			s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.LoadBalancerClass == nil && !opts.ClassLess
		if decides {
			err := &settings.FieldError{Key: settings.EnabledAnnotation, Value: v, Reason: "want true or false"}
			out = append(out, Problem{s, ReasonInvalidAnnotation, err.Error() + "; the Service is not taken"})
		}
	}
	return out
}

// proxies is the frontend and backend of port p of svc, whose key
// ("namespace/name") is k: the pass's own string, shared by both (a
// copy each was 2 x 16 B a Service kept, issue 29's peak).
func proxies(svc *corev1.Service, k string, p corev1.ServicePort, set settings.Settings, opts Options, multi bool, grp famGroup) (model.Frontend, model.Backend) {
	port := strconv.Itoa(int(p.Port))
	beName := model.Name("be", svc.Namespace, svc.Name, port) + grp.suffix
	if opts.Service != "" && opts.Backend != "" {
		beName = opts.Backend
		if multi {
			beName += "_" + strconv.Itoa(int(p.Port))
		}
		beName += grp.suffix
	}
	fe := model.Frontend{
		Name:          model.Name("fe", svc.Namespace, svc.Name, port) + grp.suffix,
		Service:       k,
		AcceptProxy:   set.AcceptProxy,
		MaxConn:       set.MaxConn,
		TimeoutClient: set.TimeoutClient,
		Backend:       beName,
		SourceRanges:  settings.SourceRangesOf(set.SourceRanges),
		Binds:         grp.binds,
	}
	be := model.Backend{
		Name:           beName,
		Service:        k,
		Balance:        set.Balance,
		Check:          model.Check{Enabled: ownCheck(svc, set, opts, grp.fam), Inter: set.CheckInterval, Rise: set.Rise, Fall: set.Fall},
		SendProxyV2:    set.SendProxyV2,
		TimeoutConnect: set.TimeoutConnect,
		TimeoutServer:  set.TimeoutServer,
		TrackNodes:     tracksNodes(svc, set, opts, grp.fam),
		Affinity:       set.Affinity,
	}
	if hc := healthCheckNodePort(svc, set, opts); be.Check.Enabled && hc != 0 {
		be.Check.Port = hc
		be.Check.HTTP.Path = "/"
	}
	if carriesNodeCheck(svc, set, opts, grp.fam) {
		be.Check = opts.NodeCheck
	}
	return fe, be
}
