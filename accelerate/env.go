package accelerate

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/internal/launchenv"
)

// Environment variables read by NewAccelerator. The launcher sets them for
// every worker (torchelastic's names where one exists).
const (
	EnvRank            = launchenv.Rank
	EnvLocalRank       = launchenv.LocalRank
	EnvWorldSize       = launchenv.WorldSize
	EnvLocalWorldSize  = launchenv.LocalWorldSize
	EnvNodeRank        = launchenv.NodeRank
	EnvGroupRank       = launchenv.GroupRank
	EnvMasterAddr      = launchenv.MasterAddr
	EnvMasterPort      = launchenv.MasterPort
	EnvMixedPrecision  = launchenv.MixedPrecision
	EnvUseCPU          = launchenv.UseCPU
	EnvCUDAVisible     = launchenv.CUDAVisible
	EnvRestartCount    = launchenv.RestartCount
	EnvMaxRestarts     = launchenv.MaxRestarts
	EnvRunID           = launchenv.RunID
	EnvLaunchSecret    = launchenv.LaunchSecret
	EnvRdzvBackend     = launchenv.RdzvBackend   // "static" (default), "c10d" or "etcd"
	EnvRdzvEndpoint    = launchenv.RdzvEndpoint  // host:port of the store; default MASTER_ADDR:MASTER_PORT
	EnvRdzvNamespace   = launchenv.RdzvNamespace // store key prefix of this attempt; default RUN_ID/restartN
	defaultRdzvBackend = "static"
)

// launchEnv is the parsed environment.
type launchEnv struct {
	rank, localRank, worldSize, localWorldSize int
	nodeRank, groupRank                        int
	masterAddr, masterPort                     string
	mixedPrecision                             string // raw, validated later
	useCPU                                     bool
	cudaVisible                                []string // nil: variable unset
	restartCount, maxRestarts                  int
	runID                                      string
	secret                                     string
	rdzvBackend, storeAddr                     string
	namespace                                  string
}

// numNodes is the number of nodes of the group (every node runs
// localWorldSize processes).
func (e launchEnv) numNodes() int {
	if e.localWorldSize <= 0 {
		return 1
	}
	return max(1, e.worldSize/e.localWorldSize)
}

// readEnv parses the environment through lookupEnv (os.LookupEnv in
// production).
func readEnv(lookupEnv func(string) (string, bool)) (launchEnv, error) {
	getenv := func(k string) string { v, _ := lookupEnv(k); return v }
	e := launchEnv{worldSize: 1, localWorldSize: -1, localRank: -1}
	intVar := func(name string, dst *int, min int) error {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return fmt.Errorf("accelerate: invalid %s=%q: want an integer >= %d", name, v, min)
		}
		*dst = n
		return nil
	}
	for _, f := range []struct {
		name string
		dst  *int
		min  int
	}{
		{EnvWorldSize, &e.worldSize, 1},
		{EnvRank, &e.rank, 0},
		{EnvLocalRank, &e.localRank, 0},
		{EnvLocalWorldSize, &e.localWorldSize, 1},
		{EnvNodeRank, &e.nodeRank, 0},
		{EnvGroupRank, &e.groupRank, 0},
		{EnvRestartCount, &e.restartCount, 0},
		{EnvMaxRestarts, &e.maxRestarts, 0},
	} {
		if err := intVar(f.name, f.dst, f.min); err != nil {
			return e, err
		}
	}
	if e.worldSize > 1 && strings.TrimSpace(getenv(EnvRank)) == "" {
		return e, fmt.Errorf("accelerate: %s=%d but %s is not set", EnvWorldSize, e.worldSize, EnvRank)
	}
	if e.rank >= e.worldSize {
		return e, fmt.Errorf("accelerate: %s=%d is out of range for %s=%d", EnvRank, e.rank, EnvWorldSize, e.worldSize)
	}
	if e.localWorldSize < 0 {
		e.localWorldSize = e.worldSize
	}
	if e.localRank < 0 {
		e.localRank = e.rank % e.localWorldSize
	}
	if e.localRank >= e.localWorldSize {
		return e, fmt.Errorf("accelerate: %s=%d is out of range for %s=%d", EnvLocalRank, e.localRank, EnvLocalWorldSize, e.localWorldSize)
	}
	if e.localWorldSize > e.worldSize {
		return e, fmt.Errorf("accelerate: %s=%d exceeds %s=%d", EnvLocalWorldSize, e.localWorldSize, EnvWorldSize, e.worldSize)
	}
	e.mixedPrecision = strings.TrimSpace(getenv(EnvMixedPrecision))
	if v := strings.TrimSpace(getenv(EnvUseCPU)); v != "" {
		b, err := strToBool(v)
		if err != nil {
			return e, fmt.Errorf("accelerate: invalid %s: %w", EnvUseCPU, err)
		}
		e.useCPU = b
	}
	if v, ok := lookupEnv(EnvCUDAVisible); ok {
		e.cudaVisible = parseVisibleDevices(v)
	}
	e.runID = strings.TrimSpace(getenv(EnvRunID))
	e.secret = getenv(EnvLaunchSecret)
	e.masterAddr = strings.TrimSpace(getenv(EnvMasterAddr))
	e.masterPort = strings.TrimSpace(getenv(EnvMasterPort))
	e.rdzvBackend = strings.ToLower(strings.TrimSpace(getenv(EnvRdzvBackend)))
	if e.rdzvBackend == "" {
		e.rdzvBackend = defaultRdzvBackend
	}
	switch e.rdzvBackend {
	case "static", "c10d", "etcd":
	default:
		return e, fmt.Errorf("accelerate: unsupported %s=%q: choose between static, c10d and etcd", EnvRdzvBackend, e.rdzvBackend)
	}
	e.namespace = strings.TrimSpace(getenv(EnvRdzvNamespace))
	if e.namespace == "" {
		e.namespace = fmt.Sprintf("%s/restart%d", e.runID, e.restartCount)
	}
	if e.worldSize == 1 {
		return e, nil
	}
	// Multi-process: the rendezvous must be fully described.
	e.storeAddr = strings.TrimSpace(getenv(EnvRdzvEndpoint))
	if e.storeAddr == "" {
		if e.rdzvBackend == "c10d" {
			return e, fmt.Errorf("accelerate: %s=c10d needs %s (host:port)", EnvRdzvBackend, EnvRdzvEndpoint)
		}
		if e.masterAddr == "" || e.masterPort == "" {
			return e, fmt.Errorf("accelerate: %s=%d needs %s and %s (or %s)", EnvWorldSize, e.worldSize, EnvMasterAddr, EnvMasterPort, EnvRdzvEndpoint)
		}
		e.storeAddr = net.JoinHostPort(e.masterAddr, e.masterPort)
	}
	if _, port, err := net.SplitHostPort(e.storeAddr); err != nil || port == "" || port == "0" {
		return e, fmt.Errorf("accelerate: invalid rendezvous address %q: want host:port with a non-zero port", e.storeAddr)
	}
	if e.secret == "" {
		return e, fmt.Errorf("accelerate: %s=%d but %s is not set: multi-process groups admit only processes of the same launch", EnvWorldSize, e.worldSize, EnvLaunchSecret)
	}
	return e, nil
}

// parseVisibleDevices follows CUDA's rules: a comma-separated list of
// indices or UUIDs; parsing stops at the first invalid entry (so "-1" or ""
// hides every device).
func parseVisibleDevices(v string) []string {
	out := []string{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			break
		}
		if n, err := strconv.Atoi(f); err == nil {
			if n < 0 {
				break
			}
		} else if !strings.HasPrefix(f, "GPU-") && !strings.HasPrefix(f, "MIG-") {
			break
		}
		out = append(out, f)
	}
	return out
}

// strToBool is Accelerate's str_to_bool (utils/environment.py).
var strToBool = launchenv.StrToBool
