// Command kube-apiserver-etcd runs a real kube-apiserver (k8s.io/kubernetes
// cmd/kube-apiserver, the same code the release binary runs) over an etcd
// server embedded in the same process, so tests get a real API server from
// Go modules alone. It is a test tool: etcd listens on loopback without TLS
// and its data lives in --etcd-data-dir.
//
// Usage:
//
//	kube-apiserver-etcd --etcd-data-dir DIR [-- kube-apiserver flags...]
//
// Every argument after "--" goes to kube-apiserver unchanged; --etcd-servers
// is added, pointing at the embedded etcd.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // as cmd/kube-apiserver/apiserver.go
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as cmd/kube-apiserver/apiserver.go
	_ "k8s.io/component-base/metrics/prometheus/version"  // as cmd/kube-apiserver/apiserver.go
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	fs := flag.NewFlagSet("kube-apiserver-etcd", flag.ExitOnError)
	dataDir := fs.String("etcd-data-dir", "", "directory for the embedded etcd's data (required)")
	readyTimeout := fs.Duration("etcd-ready-timeout", 60*time.Second, "how long to wait for the embedded etcd to serve")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "kube-apiserver-etcd: --etcd-data-dir is required")
		os.Exit(2)
	}
	etcd, clientURL, err := startEtcd(*dataDir, *readyTimeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver-etcd:", err)
		os.Exit(1)
	}
	defer etcd.Close()

	command := app.NewAPIServerCommand()
	command.SetArgs(append([]string{"--etcd-servers=" + clientURL}, fs.Args()...))
	code := cli.Run(command)
	etcd.Close()
	os.Exit(code)
}

// startEtcd starts a single-member etcd on two free loopback ports and
// waits until it serves.
func startEtcd(dir string, timeout time.Duration) (*embed.Etcd, string, error) {
	client, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	peer, err := freeLoopbackURL()
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "test"
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true // test data: losing it on a crash is fine
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, client.String(), nil
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd: %w", err)
	case <-time.After(timeout):
		e.Close()
		return nil, "", errors.New("etcd not ready within --etcd-ready-timeout")
	}
}

func freeLoopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}
