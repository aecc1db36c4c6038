package nodes

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// containerdConfig: everything under the node's directory, the CRI plugin
// with the imported pause image as sandbox (nothing is pulled), runc with
// cgroupfs, CNI from Debian's plugins with the node's own configuration,
// Pod network namespaces mounted under the state directory (inside the
// node's mount namespace, never in the host's /run/netns).
const containerdConfig = `version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  # The test's processes may not lower their OOM score (no
  # CAP_SYS_RESOURCE on CI machines); containerd keeps the Pods' at or
  # above its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
    max_conf_num = 1
`

// cniConfig: a bridge with the node's Pod CIDR, the Pods' default route
// through it (isDefaultGateway); no masquerading (the
// nodes route Pod CIDRs to each other), addresses kept under the node's
// directory.
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": %[1]q,
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %[2]q, "gateway": %[3]q}]],
        "dataDir": %[4]q
      }
    }
  ]
}
`

// kubeletConfig: cgroup v1 allowed (these machines boot hybrid), cgroupfs
// (no systemd) below the tier's cgroup, kernel defaults checked not
// written, no swap check, all files under the node's directory.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]q
containerRuntimeEndpoint: unix://%[2]s
imageServiceEndpoint: unix://%[2]s
address: %[3]q
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
podLogsDir: %[4]q
volumePluginDir: %[5]q
protectKernelDefaults: true
failSwapOn: false
resolvConf: ""
maxPods: 30
registerNode: true
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 10s
# The Lease is renewed every quarter of this (1 s): tests may run the
# node-lifecycle controller with a short --node-monitor-grace-period.
nodeLeaseDurationSeconds: 4
syncFrequency: 5s
fileCheckFrequency: 5s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
serializeImagePulls: false
shutdownGracePeriod: 0s
rotateCertificates: false
serverTLSBootstrap: false
`

// kubeProxyConfig: nftables, /healthz on every address of the node, no
// conntrack sysctls touched.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: %[1]q
hostnameOverride: %[2]q
bindAddress: %[3]q
healthzBindAddress: "0.0.0.0:%[4]d"
metricsBindAddress: "127.0.0.1:10249"
clusterCIDR: %[5]q
nodePortAddresses: ["primary"]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
nftables:
  syncPeriod: 10s
  minSyncPeriod: 0s
`

func (n *Node) writeConfigs() error {
	files := map[string]string{
		"containerd.toml": fmt.Sprintf(containerdConfig, filepath.Join(n.dir, "containerd/root"), filepath.Join(n.dir, "containerd/state"),
			n.socket(), n.socket()+".ttrpc", filepath.Join(n.dir, "containerd/opt"), PauseImage, filepath.Join(n.dir, "cni")),
		"cni/10-bridge.conflist": fmt.Sprintf(cniConfig, n.tier.prefix+n.Name, n.PodCIDR, podGateway(n.index), filepath.Join(n.dir, "ipam")),
		"kubelet.yaml": fmt.Sprintf(kubeletConfig, n.cgroupRoot(), n.socket(), n.Addr, filepath.Join(n.dir, "pod-logs"),
			filepath.Join(n.dir, "volume-plugins")),
		"kube-proxy.yaml": fmt.Sprintf(kubeProxyConfig, n.tier.nodeCfg, n.Name, n.Addr, KubeProxyHealthPort, ClusterCIDR),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(n.dir, name), []byte(data), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeNodeKubeconfig writes the kubeconfig kubelet and kube-proxy use:
// the apiserver through the forwarder, its certificate (made for
// 127.0.0.1) checked against that name, the admin's token.
func (t *Tier) writeNodeKubeconfig() error {
	ca, err := os.ReadFile(t.Kube.CAPath)
	if err != nil {
		return err
	}
	t.nodeCfg = filepath.Join(t.dir, "node.kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: tier
  cluster:
    server: https://%s
    tls-server-name: 127.0.0.1
    certificate-authority-data: %s
users:
- name: node
  user:
    token: %s
contexts:
- name: tier
  context:
    cluster: tier
    user: node
current-context: tier
`, UnderlayGateway+":"+strconv.Itoa(APIPort), base64.StdEncoding.EncodeToString(ca), t.Kube.Token)
	return os.WriteFile(t.nodeCfg, []byte(cfg), 0o600)
}
