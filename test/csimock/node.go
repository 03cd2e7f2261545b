package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

// switchableNodeCapabilities are the node capabilities --node-capabilities may name. The upstream
// service always advertises STAGE_UNSTAGE_VOLUME and GET_VOLUME_STATS (service/node.go
// NodeGetCapabilities), EXPAND_VOLUME and VOLUME_MOUNT_GROUP by its Config, and never
// SINGLE_NODE_MULTI_WRITER; mockNode makes the answer the flag's.
var switchableNodeCapabilities = []csi.NodeServiceCapability_RPC_Type{
	csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
	csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
	csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
	csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP,
	csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
}

func knownNodeCapabilityNames() []string {
	names := make([]string, len(switchableNodeCapabilities))
	for i, c := range switchableNodeCapabilities {
		names[i] = c.String()
	}
	return names
}

func parseNodeCapabilities(list string) (map[csi.NodeServiceCapability_RPC_Type]bool, error) {
	caps := map[csi.NodeServiceCapability_RPC_Type]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for _, c := range switchableNodeCapabilities {
			if c.String() == name {
				caps[c] = true
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown or unsupported node capability %q (known: %s)", name, strings.Join(knownNodeCapabilityNames(), ", "))
		}
	}
	return caps, nil
}

type stagedKey struct{ volumeID, stagingPath string }

// mockNode is the upstream mock service with the node answers a test chooses. An RPC of a node
// capability switched off answers Unimplemented, as the upstream service does for
// ControllerPublishVolume without attach (service/controller.go), so a caller that ignores the
// capabilities is caught. With STAGE_UNSTAGE_VOLUME, NodePublishVolume of a persistent volume
// wants it staged at the staging_target_path it names (checkStaged; the upstream mock does not
// check it).
type mockNode struct {
	service.Service
	nodeID   string
	topology map[string]string
	caps     map[csi.NodeServiceCapability_RPC_Type]bool
	bind     *bindMounter // nil without --bind-mounts
	// What NodeStageVolume staged. The interceptor runs one call at a time (calllog.go), so
	// neither this nor the upstream service's package-level MockVolumes needs a lock of ours.
	staged map[stagedKey]bool
}

func (n *mockNode) NodeGetInfo(ctx context.Context, req *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	resp, err := n.Service.NodeGetInfo(ctx, req)
	if err != nil {
		return nil, err
	}
	// The upstream service answers its driver name as the node ID and a fixed topology segment.
	resp.NodeId = n.nodeID
	resp.AccessibleTopology = nil
	if len(n.topology) > 0 {
		resp.AccessibleTopology = &csi.Topology{Segments: maps.Clone(n.topology)}
	}
	return resp, nil
}

func (n *mockNode) NodeGetCapabilities(ctx context.Context, req *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	resp, err := n.Service.NodeGetCapabilities(ctx, req)
	if err != nil {
		return nil, err
	}
	// Upstream's first entry, of type UNKNOWN, stays: a caller must skip what it does not know.
	kept := []*csi.NodeServiceCapability{}
	for _, c := range resp.Capabilities {
		if t := c.GetRpc().GetType(); t == csi.NodeServiceCapability_RPC_UNKNOWN || n.caps[t] {
			kept = append(kept, c)
		}
	}
	if n.caps[csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER] {
		kept = append(kept, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER},
		}})
	}
	resp.Capabilities = kept
	return resp, nil
}

func (n *mockNode) require(c csi.NodeServiceCapability_RPC_Type, rpc string) error {
	if n.caps[c] {
		return nil
	}
	return status.Errorf(codes.Unimplemented, "%s is not supported: the driver does not have the %s node capability", rpc, c)
}

func (n *mockNode) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if err := n.require(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, "NodeStageVolume"); err != nil {
		return nil, err
	}
	resp, err := n.Service.NodeStageVolume(ctx, req)
	if err == nil {
		n.staged[stagedKey{req.VolumeId, req.StagingTargetPath}] = true
	}
	return resp, err
}

func (n *mockNode) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if err := n.require(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, "NodeUnstageVolume"); err != nil {
		return nil, err
	}
	resp, err := n.Service.NodeUnstageVolume(ctx, req)
	if err == nil {
		delete(n.staged, stagedKey{req.VolumeId, req.StagingTargetPath})
	}
	return resp, err
}

func (n *mockNode) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	ephemeral := req.GetVolumeContext()["csi.storage.k8s.io/ephemeral"] == "true"
	if n.caps[csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] && !ephemeral {
		if err := n.checkStaged(req.VolumeId, req.StagingTargetPath); err != nil {
			return nil, err
		}
	}
	var resp *csi.NodePublishVolumeResponse
	var err error
	if ephemeral && !n.holds(ctx, req.VolumeId) {
		resp, err = publishInline(req)
	} else {
		resp, err = n.Service.NodePublishVolume(ctx, req)
	}
	if err != nil || n.bind == nil {
		return resp, err
	}
	note, err := n.bind.publish(req.VolumeId, req.TargetPath, req.Readonly)
	noteCall(ctx, "bindMount", note)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "bind-mounting volume %q at %q: %v", req.VolumeId, req.TargetPath, err)
	}
	return resp, nil
}

// checkStaged refuses a publish of a volume not staged at the staging_target_path it names, with
// csi-driver-host-path's codes and words (pkg/hostpath/nodeserver.go NodePublishVolume).
func (n *mockNode) checkStaged(volumeID, stagingPath string) error {
	var paths []string
	for key := range n.staged {
		if key.volumeID == volumeID {
			paths = append(paths, key.stagingPath)
		}
	}
	sort.Strings(paths)
	switch {
	case len(paths) == 0:
		return status.Errorf(codes.FailedPrecondition, "volume %q must be staged before publishing", volumeID)
	case !slices.Contains(paths, stagingPath):
		return status.Errorf(codes.InvalidArgument, "volume %q was staged at %v, not %q", volumeID, paths, stagingPath)
	}
	return nil
}

// holds says whether the service has the volume (ControllerGetVolume answers NotFound otherwise).
func (n *mockNode) holds(ctx context.Context, volumeID string) bool {
	_, err := n.Service.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: volumeID})
	return status.Code(err) != codes.NotFound
}

// publishInline publishes an inline (ephemeral) volume the service does not hold, as upstream's
// NodePublishVolume means to: in v1.37.2 (service/node.go) it dereferences the nil volume it
// found for such a volume and takes the process down. Same checks and messages, then the record
// its NodeUnpublishVolume reads (MockVolumes); like upstream, the target path is not made.
func publishInline(req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "Volume ID cannot be empty")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "Target Path cannot be empty")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "Volume Capability cannot be empty")
	}
	service.MockVolumes[req.VolumeId] = service.Volume{ISEphemeral: true}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (n *mockNode) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if n.bind != nil && req.TargetPath != "" {
		// Before the upstream service removes the target path (os.RemoveAll): through a mount, that
		// would empty the volume.
		note, err := n.bind.unpublish(req.TargetPath)
		noteCall(ctx, "bindMount", note)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "unmounting %q: %v", req.TargetPath, err)
		}
	}
	return n.Service.NodeUnpublishVolume(ctx, req)
}

func (n *mockNode) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := n.require(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS, "NodeGetVolumeStats"); err != nil {
		return nil, err
	}
	resp, err := n.Service.NodeGetVolumeStats(ctx, req)
	if err != nil || n.bind == nil {
		return resp, err
	}
	usage, err := n.bind.usage(req.VolumeId)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "statfs of volume %q: %v", req.VolumeId, err)
	}
	resp.Usage = usage
	return resp, nil
}

func (n *mockNode) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if err := n.require(csi.NodeServiceCapability_RPC_EXPAND_VOLUME, "NodeExpandVolume"); err != nil {
		return nil, err
	}
	return n.Service.NodeExpandVolume(ctx, req)
}
