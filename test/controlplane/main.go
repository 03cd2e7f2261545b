// controlplane runs a real etcd (embedded) and a real kube-apiserver in one process, on loopback,
// for statelet's cluster tests.
//
//	controlplane -etcd-dir DIR -etcd-port P -etcd-peer-port Q -- <kube-apiserver flags>
//
// The apiserver is upstream's own command (k8s.io/kubernetes/cmd/kube-apiserver/app); this file
// only adds etcd in front of it, so the tests have one process to start and stop.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"
	_ "time/tzdata"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	flags := flag.NewFlagSet("controlplane", flag.ExitOnError)
	dir := flags.String("etcd-dir", "", "etcd data directory (fresh for each run)")
	clientPort := flags.Int("etcd-port", 0, "etcd client port on 127.0.0.1")
	peerPort := flags.Int("etcd-peer-port", 0, "etcd peer port on 127.0.0.1")
	_ = flags.Parse(os.Args[1:])
	if *dir == "" || *clientPort == 0 || *peerPort == 0 {
		fmt.Fprintln(os.Stderr, "controlplane: -etcd-dir, -etcd-port and -etcd-peer-port are required")
		os.Exit(2)
	}

	loopback := func(port int) url.URL {
		return url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	}
	cfg := embed.NewConfig()
	cfg.Name = "controlplane"
	cfg.Dir = *dir
	cfg.UnsafeNoFsync = true // test data: speed over durability
	cfg.LogLevel = "warn"
	cfg.ListenClientUrls = []url.URL{loopback(*clientPort)}
	cfg.AdvertiseClientUrls = cfg.ListenClientUrls
	cfg.ListenPeerUrls = []url.URL{loopback(*peerPort)}
	cfg.AdvertisePeerUrls = cfg.ListenPeerUrls
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane: etcd:", err)
		os.Exit(1)
	}
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "controlplane: etcd not ready after 60s")
		os.Exit(1)
	}
	go func() {
		if err := <-etcd.Err(); err != nil {
			fmt.Fprintln(os.Stderr, "controlplane: etcd failed:", err)
			os.Exit(1)
		}
	}()

	// NewAPIServerCommand sets up the signal context itself (a second setup panics): the first
	// SIGTERM stops the apiserver gracefully, and we close etcd after it returns.
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(append(flags.Args(), "--etcd-servers="+cfg.ListenClientUrls[0].String()))
	code := cli.Run(cmd)
	etcd.Close()
	os.Exit(code)
}
