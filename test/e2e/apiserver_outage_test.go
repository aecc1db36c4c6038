package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestRelistAfterAPIServerOutage for the apiserver mode: its one
// apiserver is killed for apiserverOutage and started again. HAProxy
// keeps the list meanwhile; once the apiserver is back the informers
// relist at once (internal/source/relist.go, through
// apiserverlb.Options.Outage): a change of the configmap source made
// right after is in HAProxy's backend within the convergence target of
// issue 23 (5 s), instead of after the reflectors' backoff. The
// controller talks to the member directly, so that HAProxy's health
// checks of the member it brings back are not part of what is measured.
func TestAPIServerRelistAfterOutage(t *testing.T) {
	if !inNetns(t, append(memberAddrs[:2:2], lbAddr)...) {
		return
	}
	a := newAPILB(t)
	a.member(memberAddrs[0])
	client, err := kubernetes.NewForConfig(a.cluster.Config(a.cluster.URL(memberAddrs[0])))
	if err != nil {
		t.Fatal(err)
	}
	const cmNS, cmName = "hks-relist", "apiservers"
	if _, err := client.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cmNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cmNS, Name: cmName}, Data: map[string]string{"servers": apiAddr(memberAddrs[0])}}
	if _, err := client.CoreV1().ConfigMaps(cmNS).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	creds := []string{"--api-server", a.cluster.URL(memberAddrs[0]), "--token-file", a.cluster.TokenPath, "--ca-file", a.cluster.CAPath}
	a.runController(a.apiControllerArgs(creds, "--apiserver-sources", "configmap", "--apiserver-configmap", cmNS+"/"+cmName))
	a.within(converge, "the ConfigMap's list served", a.serving(false, apiAddr(memberAddrs[0])))

	a.cluster.Kill(memberAddrs[0])
	// The outage's length, not synchronisation.
	time.Sleep(apiserverOutage)
	if err := a.serving(false, apiAddr(memberAddrs[0]))(); err != nil {
		t.Errorf("the list not kept during the outage: %v", err)
	}
	a.member(memberAddrs[0])
	back := time.Now()
	cm.Data["servers"] = apiAddr(memberAddrs[0]) + "\n" + apiAddr(memberAddrs[1])
	if _, err := client.CoreV1().ConfigMaps(cmNS).Update(bg, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitUntil(targetConverge, a.serving(false, apiAddr(memberAddrs[0]), apiAddr(memberAddrs[1]))); err != nil {
		t.Fatalf("a ConfigMap change made once the apiserver was back: %v\ncontroller log:\n%s", err, tail(a.ctlLog.String(), 30))
	}
	t.Logf("served %v after the apiserver was ready again", time.Since(back).Round(10*time.Millisecond))
	// The change may come in through a reflector that reconnected on its
	// own before the relister's next probe (every 250 ms) saw the
	// apiserver back: its relist, and its log line, may follow the change.
	if err := waitUntil(targetConverge, func() error {
		if !strings.Contains(a.ctlLog.String(), "relisted after the apiserver outage") {
			return errors.New("no relist logged")
		}
		return nil
	}); err != nil {
		t.Errorf("the controller did not say it relisted within %v of serving the change", targetConverge)
	}
}
