package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// client-go's workqueue takes one metrics provider per process
// (workqueue.SetProvider works once), and a queue asks for its metrics when
// it is created. The provider below is installed on the first New and
// hands out children of these vectors; every Registry registers the same
// vectors, so each one exposes the process's queues (a collector may be
// registered in several registries). Queues created before the first New
// have no metrics.
var (
	wqOnce sync.Once
	wq     = struct {
		depth, unfinished, longest *prometheus.GaugeVec
		adds, retries              *prometheus.CounterVec
		latency, work              *prometheus.HistogramVec
	}{
		depth:      wqGauge("depth", "Current depth of the workqueue."),
		unfinished: wqGauge("unfinished_work_seconds", "Seconds of work in progress not yet observed by work_duration; large values mean stuck threads."),
		longest:    wqGauge("longest_running_processor_seconds", "Seconds the longest running processor of the workqueue has been running."),
		adds:       wqCounter("adds_total", "Adds handled by the workqueue."),
		retries:    wqCounter("retries_total", "Retries handled by the workqueue."),
		latency:    wqHistogram("queue_duration_seconds", "Seconds an item stays in the workqueue before being requested."),
		work:       wqHistogram("work_duration_seconds", "Seconds processing an item from the workqueue takes."),
	}
)

func wqGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: "workqueue", Name: name, Help: help}, []string{"name"})
}

func wqCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "workqueue", Name: name, Help: help}, []string{"name"})
}

func wqHistogram(name, help string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "workqueue", Name: name, Help: help,
		Buckets: prometheus.ExponentialBuckets(10e-6, 10, 8), // 10µs .. 100s
	}, []string{"name"})
}

func registerWorkqueue(reg *prometheus.Registry) {
	wqOnce.Do(func() { workqueue.SetProvider(wqProvider{}) })
	reg.MustRegister(wq.depth, wq.unfinished, wq.longest, wq.adds, wq.retries, wq.latency, wq.work)
}

type wqProvider struct{}

func (wqProvider) NewDepthMetric(n string) workqueue.GaugeMetric { return wq.depth.WithLabelValues(n) }
func (wqProvider) NewAddsMetric(n string) workqueue.CounterMetric {
	return wq.adds.WithLabelValues(n)
}
func (wqProvider) NewLatencyMetric(n string) workqueue.HistogramMetric {
	return wq.latency.WithLabelValues(n)
}
func (wqProvider) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	return wq.work.WithLabelValues(n)
}
func (wqProvider) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return wq.unfinished.WithLabelValues(n)
}
func (wqProvider) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return wq.longest.WithLabelValues(n)
}
func (wqProvider) NewRetriesMetric(n string) workqueue.CounterMetric {
	return wq.retries.WithLabelValues(n)
}
