# haproxy-k8s-sync: build, test and demo targets.
#
# Tests run against a real kube-apiserver and etcd built from the Go module
# proxy (hack/testbin.sh; minutes on a machine's first run, then cached in
# $${XDG_CACHE_HOME:-$$HOME/.cache}/haproxy-k8s-sync/testbin) and a real
# HAProxy (Debian's haproxy package; `make deps` installs it).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO ?= go
TESTFLAGS ?=
# One package (test/e2e, with the real-node tier) takes ~8 min on a quiet
# 2-core machine and up to ~17 min on a loaded one: room for both.
TEST_TIMEOUT ?= 40m
PKGS ?= ./...
# make test's queue (hack/test.sh): how many test processes run at once,
# each in a network namespace of its own (4 on the 2-core machine: the
# queue is bound by CPU there, ~1.7 of the 2 cores busy in the jobs at 4
# as at 6; docs/testing.md); TEST_FUZZ= leaves make fuzz out.
TEST_JOBS ?= 4
TEST_FUZZ ?= 1
# make test (its vet and every test binary) and make fuzz compile with
# -trimpath: no package's build then depends on where the checkout is, so a
# clone at a new path (CI's) reuses the compile cache of every other one
# instead of compiling all of our packages again (384 s before the queue,
# measured at a new path without it).
WITH_TRIMPATH = GOFLAGS="-trimpath $${GOFLAGS:-}"; export GOFLAGS;

# Sizes for the benchmark, passed as flags only when set:
#   make bench SERVICES=500 ENDPOINTS=20 NODES=50 CHANGES=1000
# CHECKS=node: servers follow their node, each node checked once (--node-check);
# then nodes die and drain under load (-node-deaths, in BENCHFLAGS).
# DRIVER=dataplane measures the Data Plane API driver against its test server.
# LISTENERS=tproxy: run's default listener mode (the fixed listener and the
# backend pool; root: the bench runs in a network namespace of its own);
# LISTENERS=tproxy,ports both side by side (with BENCHFLAGS=-baseline=false).
SERVICES ?=
LISTENERS ?=
CHANGES ?=
ENDPOINTS ?=
NODES ?=
BENCHFLAGS ?=
DEMOFLAGS ?=
SIZEFLAGS = $(if $(SERVICES),-services=$(SERVICES)) $(if $(CHANGES),-changes=$(CHANGES)) \
	$(if $(ENDPOINTS),-endpoints=$(ENDPOINTS)) $(if $(NODES),-nodes=$(NODES)) $(if $(CHECKS),-health-checks=$(CHECKS)) \
	$(if $(LISTENERS),-listeners=$(LISTENERS))

# Debian installs haproxy in /usr/sbin, often missing from a user's PATH.
export PATH := $(PATH):/usr/sbin:/usr/local/sbin

# Runs hack/testbin.sh (building the binaries if needed) and exports the
# directory it prints for the command that follows in the same recipe line:
# every binary (the tests), or $(call testbin_only,NAMES) only those.
WITH_TESTBIN = HKS_TESTBIN_DIR="$$(hack/testbin.sh | tail -n 1)"; export HKS_TESTBIN_DIR;
testbin_only = HKS_TESTBIN_DIR="$$(hack/testbin.sh $(1) | tail -n 1)"; export HKS_TESTBIN_DIR;
# The same for helm and kustomize (hack/tools.sh), which the tests of the
# Helm chart and of the kustomize bases under deploy/ run.
WITH_TOOLS = HKS_TOOLS_DIR="$$(hack/tools.sh | tail -n 1)"; export HKS_TOOLS_DIR;

.PHONY: build test test-haproxy test-versions bench-versions vet testbin deps deps-haproxy deps-test deps-versions demo bench bench-gateway bench-pools bench-apiserver clean image chaos conformance fuzz fmt-check

build:
	$(GO) build -o bin/haproxy-k8s-sync ./cmd/haproxy-k8s-sync

# The OCI image without a container daemon (go-containerregistry, module
# hack/image): scratch base, the static binary built as the Dockerfile
# builds it, non-root, entrypoint haproxy-k8s-sync, command run. No HAProxy
# inside: for the Data Plane API mode (the sidecar mode needs the
# Dockerfile's image, which has haproxy for `haproxy -c`).
VERSION ?= dev
image:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w -X github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli.Version=$(VERSION)" -o bin/image/haproxy-k8s-sync ./cmd/haproxy-k8s-sync
	cd hack/image && $(GO) build -o ../../bin/image/build-image .
	bin/image/build-image -binary bin/image/haproxy-k8s-sync -tag haproxy-k8s-sync:$(VERSION) -o bin/haproxy-k8s-sync-image.tar
	@echo "bin/haproxy-k8s-sync-image.tar: docker load -i, podman load -i, or crane push"

# The Kubernetes binaries and test images for tests (hack/testbin.sh).
testbin:
	hack/testbin.sh

# HAProxy from Debian, if it is not installed yet, containerd, runc and the
# CNI plugins (the real-node tier), and promtool (Debian's
# prometheus package, its server never started) for the metrics test. /usr/sbin is checked too:
# it is often not on a non-root user's PATH.
deps: deps-haproxy deps-test deps-versions

# HAProxy: the demo and the benchmark need nothing else from apt.
deps-haproxy:
	@if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then \
		echo "haproxy: $$(command -v haproxy || echo /usr/sbin/haproxy)"; \
	else \
		sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
		$$sudo apt-get update; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y haproxy; \
	fi

# What the tests need besides HAProxy: promtool (checks the alert rules),
# nft (the UDP tests), containerd, runc and the CNI plugins (the real-node
# tier), keepalived, BIRD 2 and FRR (the announcers' tests; the tests start
# their own daemons in network namespaces, so Debian's bird.service and
# frr.service are left stopped and disabled where systemd runs).
deps-test:
	@hack/promtool.sh
	@if command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ]; then \
		echo "nft: $$(command -v nft || echo /usr/sbin/nft)"; \
	else \
		sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
		$$sudo apt-get update; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y nftables; \
	fi
	@# keepalived: make failover's baseline (internal/announce/layer2).
	@if command -v keepalived >/dev/null 2>&1 || [ -x /usr/sbin/keepalived ]; then \
		echo "keepalived: $$(command -v keepalived || echo /usr/sbin/keepalived)"; \
	else \
		sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
		$$sudo apt-get update; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y keepalived; \
	fi
	@# BIRD 2: the router the BGP announcer's tests peer with (internal/announce/bgp).
	@if command -v bird >/dev/null 2>&1 || [ -x /usr/sbin/bird ]; then \
		echo "bird: $$(command -v bird || echo /usr/sbin/bird)"; \
	else \
		sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
		$$sudo apt-get update; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y bird2; \
		if [ -d /run/systemd/system ]; then $$sudo systemctl disable --now bird.service || true; fi; \
	fi
	@# FRR: the second router the BGP announcer's tests peer with (zebra and bgpd
	@# started by the tests in a namespace; Debian's frr.service left stopped).
	@if [ -x /usr/lib/frr/bgpd ] && [ -x /usr/lib/frr/zebra ]; then \
		echo "frr: /usr/lib/frr"; \
	else \
		sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
		$$sudo apt-get update; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y frr; \
		if [ -d /run/systemd/system ]; then $$sudo systemctl disable --now frr.service || true; fi; \
	fi
	@# The real-node tier (internal/testing/nodes): containerd, runc, the CNI plugins.
	@if command -v containerd >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 && [ -x /usr/lib/cni/bridge ]; then \
		echo "containerd: $$(command -v containerd), runc: $$(command -v runc), CNI plugins: /usr/lib/cni"; \
	else \
		sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
		$$sudo apt-get update; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y containerd runc containernetworking-plugins; \
	fi

# debootstrap and Debian's archive keys: hack/haproxy-version.sh makes a
# root file system of the Debian release that has an HAProxy version the
# host lacks (3.0: trixie's), cached once per machine.
deps-versions:
	@if command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ]; then \
		echo "debootstrap: $$(command -v debootstrap || echo /usr/sbin/debootstrap)"; \
	else \
		sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
		$$sudo apt-get update; \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap debian-archive-keyring; \
	fi

vet:
	$(GO) vet $(PKGS)

# The suite itself runs as a queue of jobs, TEST_JOBS at once, longest
# first (hack/test.sh): each test of test/e2e and its cores (ports mode,
# TEST_VERSIONS), every other package, the client packages on
# TEST_VERSIONS, the conformance suite on the host's HAProxy and
# TEST_VERSIONS (one job) and in tproxy mode (TPROXY_CONFORMANCE, another),
# the driver on RUNTIME_VERSIONS and the fuzz targets.
test: deps deps-versions
	$(WITH_TESTBIN) $(WITH_TOOLS) $(WITH_TRIMPATH) \
	echo "HKS_TESTBIN_DIR=$$HKS_TESTBIN_DIR" && \
	$(MAKE) --no-print-directory fmt-check && \
	$(GO) vet $(PKGS) && \
	GO='$(GO)' PKGS='$(PKGS)' TESTFLAGS='$(TESTFLAGS)' TEST_TIMEOUT='$(TEST_TIMEOUT)' \
	TEST_JOBS='$(TEST_JOBS)' TEST_FUZZ='$(TEST_FUZZ)' \
	TEST_VERSIONS='$(TEST_VERSIONS)' VERSION_PKGS='$(VERSION_PKGS)' VERSION_E2E='$(VERSION_E2E)' PORTS_E2E='$(PORTS_E2E)' \
	VERSION_CONFORMANCE='$(VERSION_CONFORMANCE)' TPROXY_CONFORMANCE='$(TPROXY_CONFORMANCE)' RUNTIME_VERSIONS='$(RUNTIME_VERSIONS)' RUNTIME_PKGS='$(RUNTIME_PKGS)' \
	VERSION_SKIP='$(VERSION_SKIP)' hack/test.sh

# The packages that talk to HAProxy itself (its clients and master CLI,
# the start-up check, the local driver) and the Gateway API conformance
# suite again on each other supported version: make test runs them on 3.0
# beside the whole suite on the host's 2.6 (docs/testing.md has what each
# version showed). ~6 min warm; a cold cache first makes the version's
# root file system (hack/haproxy-version.sh, 4-12 min). The whole suite on
# one version: make test-haproxy VERSION=3.0.
TEST_VERSIONS ?= 3.0
VERSION_PKGS ?= ./internal/haproxy/... ./internal/cli/ ./internal/driver/runtimeapi/
VERSION_CONFORMANCE ?= ./test/conformance/
# The versions whose runtime powers the driver uses beyond 3.0's (from
# 3.4 it creates backends at runtime: add/publish backend) and the
# package that proves them there, in make test too (~1 min warm): the
# whole client set and the end-to-end core on 3.4 would push make test
# past 20 minutes (a warm run with them took 1,182 s); make
# test-versions TEST_VERSIONS=3.4 runs them.
RUNTIME_VERSIONS ?= 3.4
RUNTIME_PKGS ?= ./internal/driver/runtimeapi/
VERSION_SKIP ?=
# The end-to-end core on those versions too: one or more tests of each
# mode (Services, apiserver, gateway) and the chaos suite's fast cases,
# chosen to keep make test under 20 minutes warm (docs/testing.md, "The
# end-to-end core on 3.0"); VERSION_E2E= leaves them out. The controller
# and every HAProxy the tests start (the real-node tier's included) take
# the version's binary from HAPROXY_BIN (haproxytest.Bin).
VERSION_E2E ?= ^(TestLocalPolicyEndpointChurnIsHitless|TestNewServiceOneReload|TestInvalidAnnotationKeepsLastGood|TestAPIServerBootstrap|TestGatewayRouteChangesWithoutReload|TestGatewayTLSRouteBySNI|TestChaosFast)$$
# The e2e suite runs in the listener mode run defaults to, tproxy (the
# fixed listener and the backend pool, each test in a network namespace of
# its own; HKS_E2E_LISTENERS, test/e2e/listenersmode_test.go), and this
# core again with per-port frontends (HKS_E2E_LISTENERS=ports): tests of
# each area whose path differs between the modes, and every test that
# skips in tproxy mode (portsOnly). docs/testing.md,
# "The listener mode", has what it costs; PORTS_E2E= leaves them out.
PORTS_E2E ?= ^($(subst $(space),|,$(strip $(PORTS_E2E_TESTS))))$$
space := $(subst ,, )
PORTS_E2E_TESTS = TestNewServiceOneReload TestSourceRangesAndAffinity TestDualStack TestControllerRestartReloads \
	TestFailedReloadKeepsPreviousFile TestPortConflictAndUDP TestFileDescriptorLimitRefusedBeforeReload \
	TestMetricsCountWhatHappens \
	TestGatewayTCPRouteWeights TestGatewayTLSRouteBySNI TestGatewayAddressPools \
	TestIngressServedWithoutReload \
	$(PORTS_E2E_ONLY)
# Those that skip in tproxy mode: per-port binds only (portsOnly; every
# Ingress test runs in tproxy mode now).
PORTS_E2E_ONLY = TestTakenPortRefusedBeforeReloadAndRetried
# The conformance profiles run once more, on the host's HAProxy, in
# tproxy mode (HKS_E2E_LISTENERS=tproxy, the HTTP and HTTPS listeners on
# as run's default), in a job of their own, test/conformance@tproxy (its
# own tier), beside the per-version runs in ports mode: every profile,
# extended features included (the profiles named group the report; the
# tests that run are those of the features the GatewayClass supports,
# whatever the profiles). TPROXY_CONFORMANCE= leaves it out.
TPROXY_CONFORMANCE ?= GATEWAY-TCP,GATEWAY-UDP,GATEWAY-TLS,GATEWAY-HTTP,GATEWAY-GRPC
test-versions: deps-versions
	@set -e; $(WITH_TESTBIN) $(WITH_TOOLS) for v in $(TEST_VERSIONS); do \
		bin="$$(hack/haproxy-version.sh $$v | tail -n 1)"; \
		echo "HAProxy $$v: $$bin"; \
		HAPROXY_BIN="$$bin" $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(if $(VERSION_SKIP),-skip '$(VERSION_SKIP)') $(VERSION_PKGS); \
		$(if $(VERSION_E2E),HAPROXY_BIN="$$bin" $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run '$(VERSION_E2E)' ./test/e2e/;) \
		$(if $(VERSION_CONFORMANCE),HAPROXY_BIN="$$bin" $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(VERSION_CONFORMANCE);) \
	done

# The whole suite against one HAProxy version, the binary from
# hack/haproxy-version.sh (2.6: the host's; 3.0: Debian trixie's; 3.2: Debian sid's;
# 3.4: Debian experimental's, made and
# cached on first use) passed to the tests as HAPROXY_BIN:
#   make test-haproxy VERSION=3.0
test-haproxy: deps
	@[ "$(origin VERSION)" = "command line" ] || [ "$(origin VERSION)" = "environment" ] || \
		{ echo "make test-haproxy VERSION=2.6|3.0|3.2|3.4"; exit 2; }
	HAPROXY_BIN="$$(hack/haproxy-version.sh $(VERSION) | tail -n 1)"; export HAPROXY_BIN; \
	$(WITH_TESTBIN) $(WITH_TOOLS) \
	echo "HAPROXY_BIN=$$HAPROXY_BIN ($$($$HAPROXY_BIN -v | head -n 1))" && \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PKGS)

# Every Go file as gofmt writes it (make test runs this first).
fmt-check:
	@bad="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))"; \
	if [ -n "$$bad" ]; then echo "not gofmt-formatted (run gofmt -w on them):"; echo "$$bad"; exit 1; fi

# Every fuzz target for a fixed number of executions each (make test runs
# this, so CI does). Plain `go test` already runs each target's seeds and
# the corpus under the package's testdata/fuzz/<Target>/; a crasher found
# here is written there: commit it (with the fix), it is then a seed for
# good. The budget is a count, not a duration: go1.26's coordinator can
# fail a target with a bare "context deadline exceeded" when a -fuzztime
# duration runs out while a worker is busy (golang/go#75804, fixed in
# go1.27), and did in CI. Each count is about 8 s of this machine's rate
# (2 cores); FUZZTIME=30s (or =1000000x) overrides every target's budget.
FUZZTIME ?=
FUZZ_TARGETS = ./internal/settings:FuzzApply:200000x \
	./internal/settings:FuzzParseSourceRanges:60000x \
	./internal/controller:FuzzLastGood:6000x \
	./internal/apiserverlb:FuzzLoadState:5000x \
	./internal/driver/runtimeapi:FuzzRestoreTracks:3000x \
	./internal/haproxy:FuzzRuntimeParsers:120000x \
	./internal/dataplane:FuzzResponses:10000x \
	./internal/driver/nft:FuzzRender:15000x \
	./internal/objects:FuzzLoad:7000x \
	./internal/model:FuzzName:40000x \
	./internal/model:FuzzValidSNI:60000x \
	./internal/spares:FuzzDecode:150000x \
	./internal/desired:FuzzServiceSpec:40000x \
	./internal/render:FuzzListenerKey:90000x \
	./internal/gateway:FuzzHTTPRoute:5000x \
	./internal/ingress:FuzzParseAnnotations:20000x \
	./internal/ingress:FuzzRouting:20000x \
	./internal/gateway:FuzzHTTPRouteExt:5000x \
	./internal/gateway:FuzzGRPCRoute:2000x \
	./internal/gateway:FuzzCORSFilter:10000x \
	./internal/gateway:FuzzTableMemo:60x
fuzz:
	@$(WITH_TRIMPATH) GO='$(GO)' FUZZTIME='$(FUZZTIME)' hack/fuzz.sh $(FUZZ_TARGETS)

# Placeholders: the programs under hack/demo and hack/bench are written
# separately. Both may start a kube-apiserver through internal/testing/kubeapi.
# Built, then exec'd (not `go run`): the program itself gets make's SIGINT
# and SIGTERM, and stops every process it started.
demo: deps-haproxy
	$(GO) build -o bin/demo ./hack/demo
	$(call testbin_only,kube-apiserver etcd) exec bin/demo $(DEMOFLAGS)

bench: deps-haproxy
	$(GO) build -o bin/bench ./hack/bench
	$(call testbin_only,kube-apiserver etcd) exec bin/bench $(SIZEFLAGS) $(if $(DRIVER),-driver=$(DRIVER)) $(BENCHFLAGS)

# Gateway API churn against the Services mode (root: a network namespace).
bench-gateway: deps-haproxy
	$(GO) build -o bin/bench ./hack/bench
	$(call testbin_only,kube-apiserver etcd) exec bin/bench -gateway -changes $(or $(CHANGES),40) $(BENCHFLAGS)

# The LoadBalancer address pools against one address for all (issue 21),
# side by side in one run: make bench-pools SERVICES=10000 CHANGES=200
bench-pools: BENCHFLAGS += -compare-pools -node-deaths=0
bench-pools: bench

# Reload-to-serving time per HAProxy version, side by side in one run
# (internal/haproxy BenchmarkReloadToServing; BENCHMARKS.md).
bench-versions: deps-haproxy deps-versions
	HKS_HAPROXY_BINS="2.6=$$(hack/haproxy-version.sh 2.6 | tail -n 1) 3.0=$$(hack/haproxy-version.sh 3.0 | tail -n 1) 3.2=$$(hack/haproxy-version.sh 3.2 | tail -n 1) 3.4=$$(hack/haproxy-version.sh 3.4 | tail -n 1)"; \
	export HKS_HAPROXY_BINS; \
	$(GO) test -count=1 -run '^$$' -bench BenchmarkReloadToServing -benchtime $(or $(CHANGES),20)x ./internal/haproxy/

# kube-apiserver failover and join times (root: a network namespace).
bench-apiserver: deps
	$(call testbin_only,kube-apiserver etcd) $(GO) test -count=1 -run '^$$' -bench BenchmarkAPIServerFailover -benchtime 1x ./test/e2e/

# A new Service port's time to first connection in each listener mode,
# side by side in one run (issue 29; root: network namespaces;
# internal/driver/tproxy BenchmarkNewPort; BENCHMARKS.md).
bench-listeners: deps-haproxy
	$(GO) test -count=1 -run '^$$' -bench BenchmarkNewPort -benchtime $(or $(CHANGES),30)x ./internal/driver/tproxy/

.PHONY: bench-listeners

# Address failover (issue 31, root: network namespaces): our layer 2
# announcer beside keepalived, TRIALS per fault and family; prints the
# table of BENCHMARKS.md. FAILOVER_ONLY=ours or keepalived runs one.
# Then the BGP announcer against BIRD 2 (internal/announce/bgp, its own
# table; FAILOVER_ONLY=bgp runs it alone, =keepalived skips it). Without
# FAILOVER_ONLY also: 500 addresses at once, TRIALS trials for a client
# behind a router (keepalived beside us), connections kept across a
# failover (10 runs), the 10-minute apiserver outage (the announcer alone,
# then the chart's Pods on the real-node tier with a host failing in it).
TRIALS ?= 20
FAILOVER_ONLY ?=
.PHONY: failover
failover: deps
	HKS_FAILOVER_TRIALS=$(TRIALS) HKS_FAILOVER_ONLY=$(FAILOVER_ONLY) $(GO) test -count=1 -run '^$$' -bench '^BenchmarkFailover$$' -benchtime 1x -timeout 60m $(if $(filter bgp,$(FAILOVER_ONLY)),,./internal/announce/layer2/) ./internal/announce/bgp/
	$(if $(FAILOVER_ONLY),,$(GO) test -count=1 -v -run '^TestFailoverManyAddresses$$' ./internal/announce/layer2/)
	$(if $(FAILOVER_ONLY),,HKS_FAILOVER_TRIALS=$(TRIALS) HKS_FAILOVER_KEEPALIVED=1 $(GO) test -count=1 -v -run '^TestFailoverBehindRouter$$' -timeout 30m ./internal/announce/layer2/)
	$(if $(FAILOVER_ONLY),,$(GO) test -count=10 -v -run '^TestFailoverKeepsConnections$$' ./internal/announce/layer2/)
	$(if $(FAILOVER_ONLY),,$(WITH_TESTBIN) HKS_APISERVER_OUTAGE=10m $(GO) test -count=1 -v -run '^TestAnnounceThroughAPIServerOutage$$' -timeout 20m ./internal/cli/)
	$(if $(FAILOVER_ONLY),,$(WITH_TESTBIN) HKS_CHART_OUTAGE=10m $(GO) test -count=1 -v -run '^TestRealNodeChartAnnounce$$' -timeout 25m ./test/e2e/)

clean:
	rm -rf bin

# The chaos suite (issue 23, test/e2e/chaos_*_test.go): faults injected one
# at a time under a steady load through HAProxy to real Pods on the
# real-node tier (root: network namespaces); writes the table to
# docs/reliability.md. CHAOS_ONLY=a,b runs only those faults (no table
# written then).
CHAOS_ONLY ?=
chaos: deps
	$(WITH_TESTBIN) \
	HKS_CHAOS=1 HKS_CHAOS_ONLY="$(CHAOS_ONLY)" HKS_CHAOS_REPORT="$(if $(CHAOS_ONLY),,$(CURDIR)/docs/reliability.md)" \
	$(GO) test -count=1 -timeout 30m -v -run '^TestChaos$$' ./test/e2e/

# The upstream Gateway API conformance suite (issue 22, test/conformance):
# profiles GATEWAY-TCP, GATEWAY-UDP, GATEWAY-TLS, GATEWAY-HTTP and GATEWAY-GRPC, provisional tests
# included, against run --mode=gateway on the real-node tier (root:
# network namespaces), with the suite's images built locally
# (hack/testbin.sh: conformance-images.tar). Writes the suite's report to
# docs/conformance/report.yaml (docs/conformance/README.md reads it);
# make test runs the same test, without writing the report.
conformance: deps
	$(WITH_TESTBIN) \
	HKS_CONFORMANCE_TESTS=all HKS_CONFORMANCE_REPORT="$(CURDIR)/docs/conformance/report.yaml" \
	$(GO) test -count=1 -timeout 60m -v -run '^TestConformance$$' ./test/conformance/
