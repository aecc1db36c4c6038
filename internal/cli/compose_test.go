package cli

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

// The desired state's options follow from what the chosen drivers can do
// (driverCaps), whichever way they were chosen.
func TestCompositionShapesTheModel(t *testing.T) {
	single := desired.Options{Service: "ing/front", TrackNodes: true}
	for _, tc := range []struct {
		name    string
		kinds   []string
		udp     capabilities
		in      desired.Options
		track   bool
		backend string
		udpOn   bool
		udpOff  string
		carry   bool
	}{
		{name: "local HAProxy", kinds: []string{driverHAProxy}, in: single, track: true},
		{name: "local HAProxy, --track-nodes=false", kinds: []string{driverHAProxy}, in: desired.Options{TrackNodes: false}},
		{name: "Data Plane API: no node tracking, the operator's backend", kinds: []string{driverDataplane}, in: single, backend: "front"},
		{name: "Data Plane API with --backend-name", kinds: []string{driverDataplane}, in: desired.Options{Service: "ing/front", Backend: "be_x", TrackNodes: true}, backend: "be_x"},
		{name: "Data Plane API, every Service: servers follow their node, no backend name", kinds: []string{driverDataplane}, in: desired.Options{TrackNodes: true}, track: true},
		{name: "Data Plane API, every Service, --track-nodes=false", kinds: []string{driverDataplane}, in: desired.Options{TrackNodes: false}},
		{name: "instances, one of each, every Service: both follow nodes", kinds: []string{driverHAProxy, driverDataplane}, in: desired.Options{TrackNodes: true}, track: true},
		{name: "instances, one of each, single-Service: the operator's backend follows no node", kinds: []string{driverHAProxy, driverDataplane}, in: single, backend: "front"},
		{name: "instances, local only", kinds: []string{driverHAProxy, driverHAProxy}, in: single, track: true},
		{name: "Data Plane API, single-Service, --node-check given: its servers carry it", kinds: []string{driverDataplane}, in: desired.Options{Service: "ing/front", TrackNodes: true, CarryNodeCheck: true}, backend: "front", carry: true},
		{name: "Data Plane API, every Service, --node-check given: servers follow their node", kinds: []string{driverDataplane}, in: desired.Options{TrackNodes: true, CarryNodeCheck: true}, track: true},
		{name: "local HAProxy, single-Service, --node-check given: servers follow their node", kinds: []string{driverHAProxy}, in: desired.Options{Service: "ing/front", TrackNodes: true, CarryNodeCheck: true}, track: true},
		{name: "instances, single-Service, --node-check given: the model both apply carries it", kinds: []string{driverHAProxy, driverDataplane}, in: desired.Options{Service: "ing/front", TrackNodes: true, CarryNodeCheck: true}, backend: "front", carry: true},
		{name: "the kernel's UDP", kinds: []string{driverHAProxy}, udp: capabilities{udp: true}, in: single, track: true, udpOn: true},
		{name: "no UDP, and why", kinds: []string{driverHAProxy}, udp: capabilities{udpOff: "off"}, in: single, track: true, udpOff: "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := driverChoice{kinds: tc.kinds}.capabilities(tc.udp).shape(tc.in)
			if o.TrackNodes != tc.track || o.Backend != tc.backend || o.UDP != tc.udpOn || o.UDPOff != tc.udpOff || o.CarryNodeCheck != tc.carry {
				t.Errorf("TrackNodes=%v Backend=%q UDP=%v UDPOff=%q CarryNodeCheck=%v; want %v %q %v %q %v",
					o.TrackNodes, o.Backend, o.UDP, o.UDPOff, o.CarryNodeCheck, tc.track, tc.backend, tc.udpOn, tc.udpOff, tc.carry)
			}
		})
	}
}

func TestChooseDriver(t *testing.T) {
	var l instanceList
	if err := l.Set("name=a,config=/a.cfg,master=/a.sock,stats=/a.stats,state=/a.state"); err != nil {
		t.Fatal(err)
	}
	if err := l.Set("name=b,dataplane-url=http://127.0.0.1:5555"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		f         runFlags
		dataplane bool
		label     string
		kinds     int
	}{
		{"the local HAProxy", runFlags{}, false, driverHAProxy, 1},
		{"a Data Plane API", runFlags{}, true, driverDataplane, 1},
		{"instances", runFlags{instances: l}, false, driverInstances, 2},
	} {
		c := tc.f.chooseDriver(tc.dataplane)
		if c.label != tc.label || len(c.kinds) != tc.kinds {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
}
