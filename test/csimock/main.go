// csimock serves Kubernetes' own CSI mock driver
// (k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service, the release go.mod pins) as a
// plain process, for statelet's CSI tests: the driver's Identity, Controller and Node services on
// one unix socket (--csi-socket), and a registration socket in the kubelet's plugin registry
// (--registration-dir) answering the kubelet's plugin watcher as node-driver-registrar does
// (registration.go). Around the upstream service it adds only what a test of the node side needs
// (node.go): the node ID and topology the test chooses, node capabilities switched on and off, a
// log of every RPC (calllog.go), injected gRPC errors (faults.go) and, with --bind-mounts, a volume
// a pod can write through (bindmount.go).
//
// It prints `ready` on stdout once both sockets listen. SIGTERM or SIGINT stops it and removes
// both sockets (the registrar removes its socket on SIGTERM only: a SIGKILL leaves it behind, as a
// crashed registrar does).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

// segments is a repeatable key=value flag.
type segments map[string]string

func (s segments) String() string {
	parts := make([]string, 0, len(s))
	for k, v := range s {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (s segments) Set(value string) error {
	key, val, ok := strings.Cut(value, "=")
	if !ok || key == "" {
		return fmt.Errorf("want key=value, got %q", value)
	}
	s[key] = val
	return nil
}

type options struct {
	csiSocket       string
	registrationDir string
	driverName      string
	nodeID          string
	nodeCaps        string
	attach          bool
	maxVolumes      int64
	topology        segments
	volumes         int
	callLog         string
	failFile        string
	bindMounts      bool
	stateDir        string
}

func parseFlags() (*options, error) {
	o := &options{topology: segments{}}
	flag.StringVar(&o.csiSocket, "csi-socket", "", "the unix socket to serve the CSI Identity, Controller and Node services on (required)")
	flag.StringVar(&o.registrationDir, "registration-dir", "", "the kubelet's plugin registry (<root-dir>/plugins_registry): serve <driver>-reg.sock there; none: no registration socket")
	flag.StringVar(&o.driverName, "driver-name", service.Name, "the driver's name (GetPluginInfo, GetInfo)")
	flag.StringVar(&o.nodeID, "node-id", "", "the node ID NodeGetInfo answers (required)")
	flag.StringVar(&o.nodeCaps, "node-capabilities", "STAGE_UNSTAGE_VOLUME,GET_VOLUME_STATS",
		"the node service's capabilities, comma-separated, of "+strings.Join(knownNodeCapabilityNames(), ", ")+" (empty: none)")
	flag.BoolVar(&o.attach, "attach", false, "advertise the controller's PUBLISH_UNPUBLISH_VOLUME; NodeStageVolume and NodePublishVolume then want publish_context[\"device\"] (the VolumeAttachment's attachmentMetadata)")
	flag.Int64Var(&o.maxVolumes, "max-volumes-per-node", 0, "NodeGetInfo's max_volumes_per_node (0: unset)")
	flag.Var(o.topology, "topology", "a segment key=value of NodeGetInfo's accessible_topology (repeatable; none: no topology)")
	flag.IntVar(&o.volumes, "volumes", 3, "how many volumes the driver holds, with IDs \"1\" to \"N\" (the upstream service starts with 3, 100 GiB each)")
	flag.StringVar(&o.callLog, "call-log", "", "append one JSON line per RPC to this file")
	flag.StringVar(&o.failFile, "fail-file", "", "a JSON file of errors to inject, re-read at every RPC (see faults.go)")
	flag.BoolVar(&o.bindMounts, "bind-mounts", false, "NodePublishVolume bind-mounts <state-dir>/<volume> onto the target path (see bindmount.go)")
	flag.StringVar(&o.stateDir, "state-dir", "", "where --bind-mounts keeps a directory per volume (required with --bind-mounts)")
	flag.Parse()
	switch {
	case flag.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", flag.Args())
	case o.csiSocket == "":
		return nil, errors.New("--csi-socket is required")
	case o.nodeID == "":
		return nil, errors.New("--node-id is required")
	case o.bindMounts && o.stateDir == "":
		return nil, errors.New("--bind-mounts needs --state-dir")
	case !o.bindMounts && o.stateDir != "":
		return nil, errors.New("--state-dir is used only with --bind-mounts")
	case o.volumes < 3:
		return nil, errors.New("--volumes cannot be below the upstream service's own 3")
	case o.maxVolumes < 0:
		return nil, errors.New("--max-volumes-per-node cannot be negative")
	}
	return o, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "csimock: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	caps, err := parseNodeCapabilities(o.nodeCaps)
	if err != nil {
		return fmt.Errorf("--node-capabilities: %w", err)
	}
	log, err := openCallLog(o.callLog)
	if err != nil {
		return err
	}
	var bind *bindMounter
	if o.bindMounts {
		if bind, err = newBindMounter(o.stateDir); err != nil {
			return err
		}
	}
	mock := service.New(service.Config{
		DisableAttach:            !o.attach,
		DriverName:               o.driverName,
		AttachLimit:              o.maxVolumes,
		NodeExpansionRequired:    caps[csi.NodeServiceCapability_RPC_EXPAND_VOLUME],
		VolumeMountGroupRequired: caps[csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP],
		EnableTopology:           len(o.topology) > 0,
	})
	if err := addVolumes(mock, o.volumes); err != nil {
		return err
	}
	node := &mockNode{Service: mock, nodeID: o.nodeID, topology: o.topology, caps: caps, bind: bind, staged: map[stagedKey]bool{}}
	interceptor := grpc.UnaryInterceptor(intercept(log, &faults{file: o.failFile}))

	csiServer := grpc.NewServer(interceptor)
	csi.RegisterIdentityServer(csiServer, node)
	csi.RegisterControllerServer(csiServer, node)
	csi.RegisterNodeServer(csiServer, node)
	csiListener, err := listen(o.csiSocket, 0)
	if err != nil {
		return err
	}
	servers := []*grpc.Server{csiServer}
	listeners := []net.Listener{csiListener}

	if o.registrationDir != "" {
		regServer := grpc.NewServer(interceptor)
		registerapi.RegisterRegistrationServer(regServer, &registrar{driverName: o.driverName, endpoint: o.csiSocket})
		// node-driver-registrar makes its socket with umask 0077 (cmd/csi-node-driver-registrar/node_register.go nodeRegister).
		regListener, err := listen(filepath.Join(o.registrationDir, o.driverName+"-reg.sock"), 0o077)
		if err != nil {
			csiListener.Close()
			return err
		}
		servers = append(servers, regServer)
		listeners = append(listeners, regListener)
	}

	failed := make(chan error, len(servers))
	for i, server := range servers {
		go func() { failed <- server.Serve(listeners[i]) }()
	}
	fmt.Println("ready")

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-signals:
		fmt.Fprintf(os.Stderr, "csimock: %v: stopping, removing the sockets\n", sig)
		// Stop closes the listeners, which removes their sockets (net.UnixListener unlinks on Close).
		for _, server := range servers {
			server.Stop()
		}
		return nil
	case err := <-failed:
		return fmt.Errorf("serving: %w", err)
	}
}

// listen makes a unix socket at path, removing a stale one first (as node-driver-registrar's
// util.CleanupSocketFile does), with umask set while it is made.
func listen(path string, umask int) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("removing the old socket %s: %w", path, err)
	}
	old := syscall.Umask(umask)
	listener, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	return listener, nil
}

// addVolumes makes the service hold volumes "1" to "n": upstream's New makes three, CreateVolume
// (what an external provisioner would call) the rest, in order, so their IDs follow on.
func addVolumes(mock service.Service, n int) error {
	for i := 4; i <= n; i++ {
		_, err := mock.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
			Name: fmt.Sprintf("Mock Volume %d", i),
			VolumeCapabilities: []*csi.VolumeCapability{{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			}},
		})
		if err != nil {
			return fmt.Errorf("creating volume %d: %w", i, err)
		}
	}
	return nil
}
