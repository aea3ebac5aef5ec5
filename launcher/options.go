package launcher

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/launcher/rendezvous"
)

// Defaults of Options, the same as notebook_launcher's.
const (
	DefaultMixedPrecision  = "no"
	DefaultUsePort         = "29500"
	DefaultMasterAddr      = "127.0.0.1"
	DefaultRdzvBackend     = "static"
	DefaultRdzvID          = "none"
	DefaultMonitorInterval = 100 * time.Millisecond
	// DefaultLogLinePrefixTemplate is the prefix of every line a worker
	// prints when more than one process runs.
	DefaultLogLinePrefixTemplate = "[rank ${rank}] "
	// DefaultMultiNodePrefixTemplate is the default prefix when the launch
	// spans several nodes.
	DefaultMultiNodePrefixTemplate = "[node ${node_rank} rank ${rank}] "
)

// Options are notebook_launcher's parameters, with the same names (in Go
// spelling) and the same defaults; the zero value of a field means its
// default.
type Options struct {
	// NumProcesses is the number of processes on this node. 0 means one per
	// visible GPU (an error when there is none). 1 runs the function in the
	// calling process.
	NumProcesses int
	// MixedPrecision is "no" (default), "fp8", "fp16" or "bf16", in any
	// case. It reaches the workers' Accelerator as ACCELERATE_MIXED_PRECISION.
	MixedPrecision string
	// UsePort is the rendezvous port on MasterAddr (default "29500"). "0"
	// picks a free port.
	UsePort string
	// MasterAddr is the rendezvous address (default "127.0.0.1"): across
	// nodes, node 0's address as the other nodes reach it. With "etcd" and
	// an RdzvEndpoint, it defaults to this host's address towards etcd.
	MasterAddr string
	// NodeRank is the rank of this node (default 0), below NumNodes.
	NodeRank int
	// NumNodes is the number of nodes (default 1).
	NumNodes int
	// RdzvBackend is "static" (default: the node with NodeRank 0 hosts the
	// store at MasterAddr:UsePort), "c10d" (the store lives at
	// RdzvEndpoint; the first process able to bind it hosts it) or "etcd"
	// (the nodes meet in etcd, with leases: see the package documentation).
	RdzvBackend string
	// RdzvEndpoint is the store's host:port. With "static" it defaults to
	// MasterAddr:UsePort; "c10d" requires it. With "etcd" it lists the
	// cluster's client endpoints (comma-separated host:port or URLs); empty,
	// node 0 starts an embedded etcd at MasterAddr:UsePort for the launch
	// and the other nodes use that address.
	RdzvEndpoint string
	// RdzvConf is extra rendezvous configuration, passed to the workers as
	// JSON in GOACCEL_RDZV_CONF (without "password"). "join_timeout"
	// (seconds, default 600) bounds the wait for the other nodes and the
	// debug pre-flight's join. With "static", "rank" is set to NodeRank.
	// Across nodes: "secret_file" names a file holding a secret every node
	// shares (required by "static" and "c10d"; with "etcd" it keeps the
	// launch secret out of etcd); with "etcd", "lease_ttl" (seconds,
	// default 10: how soon a dead node is noticed), "etcd_prefix",
	// "protocol", "cacert", "cert", "key", "user", "password",
	// "password_file" (see package launcher/rendezvous).
	RdzvConf map[string]string
	// RdzvID is the job's run id (default "none"), TORCHELASTIC_RUN_ID.
	RdzvID string
	// MaxRestarts is how many times the whole group is restarted after a
	// worker fails (default 0).
	MaxRestarts int
	// MonitorInterval bounds how long the other workers may outlive a
	// failed one: they get SIGTERM at once and SIGKILL when MonitorInterval
	// has passed (default 100 ms). Exits are noticed as they happen, not by
	// polling.
	MonitorInterval time.Duration
	// LogLinePrefixTemplate prefixes every line a worker prints; it may use
	// ${rank}, ${local_rank}, ${node_rank} and ${role_name}. Default:
	// "[rank ${rank}] " with more than one process, "[node ${node_rank}
	// rank ${rank}] " across nodes, nothing with one process.
	LogLinePrefixTemplate string

	// UseCPU starts CPU workers even when GPUs are visible (as
	// `accelerate launch --cpu`): ACCELERATE_USE_CPU=yes and an empty
	// CUDA_VISIBLE_DEVICES. debuglauncher sets it.
	UseCPU bool
	// Env is added to every worker's environment (after the launcher's own
	// variables, so it can override them).
	Env map[string]string
}

// mixedPrecisionModes is the order Accelerate lists them in.
var mixedPrecisionModes = []string{"no", "fp8", "fp16", "bf16"}

// normalizeMixedPrecision accepts any case and returns the lower-case mode,
// or Accelerate's error.
func normalizeMixedPrecision(mp string) (string, error) {
	if mp == "" {
		return DefaultMixedPrecision, nil
	}
	low := strings.ToLower(mp)
	for _, m := range mixedPrecisionModes {
		if low == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("Unknown mixed_precision mode: %s. Choose between ['no', 'fp8', 'fp16', 'bf16']", mp)
}

// withDefaults returns o with zero fields replaced by their defaults and the
// fields checked (except NumProcesses, which the decision tree resolves).
func (o Options) withDefaults() (Options, error) {
	mp, err := normalizeMixedPrecision(o.MixedPrecision)
	if err != nil {
		return o, err
	}
	o.MixedPrecision = mp
	masterGiven := o.MasterAddr != ""
	if o.UsePort == "" {
		o.UsePort = DefaultUsePort
	}
	if p, err := strconv.Atoi(o.UsePort); err != nil || p < 0 || p > 65535 {
		return o, fmt.Errorf("launcher: UsePort %q is not a port number (0-65535; \"0\" picks a free port)", o.UsePort)
	}
	if o.MasterAddr == "" {
		o.MasterAddr = DefaultMasterAddr
	}
	if o.NumNodes == 0 {
		o.NumNodes = 1
	}
	if o.NumNodes < 0 {
		return o, fmt.Errorf("launcher: NumNodes must be at least 1, got %d", o.NumNodes)
	}
	if o.NodeRank < 0 {
		return o, fmt.Errorf("launcher: NodeRank must not be negative, got %d", o.NodeRank)
	}
	if o.NodeRank >= o.NumNodes {
		return o, ErrNodeRank
	}
	if o.RdzvBackend == "" {
		o.RdzvBackend = DefaultRdzvBackend
	}
	o.RdzvBackend = strings.ToLower(o.RdzvBackend)
	switch o.RdzvBackend {
	case "static":
		if o.RdzvEndpoint == "" {
			o.RdzvEndpoint = net.JoinHostPort(o.MasterAddr, o.UsePort)
		}
	case "c10d":
		if o.RdzvEndpoint == "" {
			return o, fmt.Errorf("launcher: RdzvBackend \"c10d\" needs RdzvEndpoint (host:port of the rendezvous store)")
		}
	case "etcd":
		if o.NumNodes < 2 {
			return o, fmt.Errorf("launcher: RdzvBackend \"etcd\" is for launches across nodes: set NumNodes (one node needs no rendezvous service)")
		}
		if err := checkEtcdEndpoints(o.RdzvEndpoint); err != nil {
			return o, err
		}
		if !masterGiven && o.RdzvEndpoint != "" {
			// Node 0's store and coordinator must be reachable from the
			// other nodes: listen on the address that reaches etcd.
			if h, err := rendezvous.OutboundHost(o.RdzvEndpoint); err == nil {
				o.MasterAddr = h
			}
		}
	default:
		return o, fmt.Errorf("launcher: unknown RdzvBackend %q; choose between 'static', 'c10d' and 'etcd'", o.RdzvBackend)
	}
	if o.RdzvBackend != "etcd" {
		if _, _, err := net.SplitHostPort(o.RdzvEndpoint); err != nil {
			return o, fmt.Errorf("launcher: RdzvEndpoint %q is not host:port: %w", o.RdzvEndpoint, err)
		}
	}
	if o.RdzvID == "" {
		o.RdzvID = DefaultRdzvID
	}
	if o.MaxRestarts < 0 {
		return o, fmt.Errorf("launcher: MaxRestarts must not be negative, got %d", o.MaxRestarts)
	}
	if o.MonitorInterval < 0 {
		return o, fmt.Errorf("launcher: MonitorInterval must not be negative, got %s", o.MonitorInterval)
	}
	if o.MonitorInterval == 0 {
		o.MonitorInterval = DefaultMonitorInterval
	}
	if o.NumNodes > 1 && o.UsePort == "0" && (o.RdzvBackend == "static" || (o.RdzvBackend == "etcd" && o.RdzvEndpoint == "")) {
		return o, fmt.Errorf("launcher: UsePort \"0\" (pick a free port) works on one node only: the other %d nodes could not know the port", o.NumNodes-1)
	}
	return o, nil
}

// checkEtcdEndpoints checks RdzvEndpoint for "etcd": comma-separated
// host:port or http(s):// URLs (empty: the embedded etcd).
func checkEtcdEndpoints(eps string) error {
	if strings.TrimSpace(eps) == "" {
		return nil
	}
	for _, ep := range strings.Split(eps, ",") {
		ep = strings.TrimSpace(ep)
		hp := ep
		if i := strings.Index(ep, "://"); i >= 0 {
			if sch := ep[:i]; sch != "http" && sch != "https" {
				return fmt.Errorf("launcher: RdzvEndpoint %q: etcd endpoints are host:port, http:// or https://", ep)
			}
			hp = strings.TrimSuffix(ep[i+3:], "/")
		}
		if _, _, err := net.SplitHostPort(hp); err != nil {
			return fmt.Errorf("launcher: RdzvEndpoint %q is not a list of etcd endpoints (host:port, comma-separated): %w", eps, err)
		}
	}
	return nil
}

// debugModeEnabled reports whether ACCELERATE_DEBUG_MODE asks for the
// pre-flight launch: 1, true or yes in any case (Accelerate accepts only
// "true" although its docs say "1" and "yes").
func debugModeEnabled() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("ACCELERATE_DEBUG_MODE"))) {
	case "1", "true", "yes":
		return true
	}
	return false
}
