package main

import (
	"context"
	"fmt"
	"os"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrar answers the kubelet's plugin watcher on the registration socket as
// node-driver-registrar does (cmd/csi-node-driver-registrar/main.go registrationServer): GetInfo
// names a CSI plugin, its name and endpoint and the versions it speaks; a registration the
// kubelet reports as failed ends the process with status 1, without answering, so that its pod
// would restart it.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	driverName string
	endpoint   string
}

// supportedVersions are node-driver-registrar's (cmd/csi-node-driver-registrar/main.go).
var supportedVersions = []string{"1.0.0"}

func (r *registrar) GetInfo(ctx context.Context, req *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.driverName,
		Endpoint:          r.endpoint,
		SupportedVersions: supportedVersions,
	}, nil
}

func (r *registrar) NotifyRegistrationStatus(ctx context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !st.PluginRegistered {
		fmt.Fprintf(os.Stderr, "csimock: Registration process failed with error: %s, restarting registration container.\n", st.Error)
		noteCall(ctx, "exit", "plugin_registered is false: exiting with status 1, as node-driver-registrar does")
		if record := recordOf(ctx); record != nil {
			record.finish(nil, nil, false)
		}
		os.Exit(1)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
