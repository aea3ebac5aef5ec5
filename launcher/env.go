package launcher

import (
	"encoding/json"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/internal/launchenv"
)

// workerEnv is the environment of local rank local in the given attempt:
// the kernel's environment, the worker command's, then the launcher's
// variables, then Options.Env.
func (l *launch) workerEnv(local, restart int, mode string) []string {
	o := l.opts
	rank := l.rankBase + local
	world := l.world
	host, port, _ := net.SplitHostPort(l.endpoint)
	set := map[string]string{
		launchenv.Rank:           strconv.Itoa(rank),
		launchenv.LocalRank:      strconv.Itoa(local),
		launchenv.WorldSize:      strconv.Itoa(world),
		launchenv.LocalWorldSize: strconv.Itoa(o.NumProcesses),
		launchenv.NodeRank:       strconv.Itoa(l.nodeRank),
		launchenv.GroupRank:      strconv.Itoa(l.nodeRank),
		"ROLE_RANK":              strconv.Itoa(rank),
		"ROLE_NAME":              roleName,
		"ROLE_WORLD_SIZE":        strconv.Itoa(world),
		"NPROC":                  strconv.Itoa(o.NumProcesses),
		launchenv.MasterAddr:     host,
		launchenv.MasterPort:     port,
		launchenv.MixedPrecision: o.MixedPrecision,
		"MIXED_PRECISION":        o.MixedPrecision,
		launchenv.RestartCount:   strconv.Itoa(restart),
		launchenv.MaxRestarts:    strconv.Itoa(o.MaxRestarts),
		launchenv.RunID:          o.RdzvID,
		EnvLaunchSecret:          l.secret,
		EnvRdzvBackend:           o.RdzvBackend,
		EnvRdzvEndpoint:          l.endpoint,
		EnvRdzvNamespace:         l.namespace(mode, restart),
		EnvRdzvConf:              l.rdzvConfJSON(),
		EnvWorkerMode:            mode,
		EnvLauncherPID:           strconv.Itoa(os.Getpid()),
		EnvLogLevel:              logrus.GetLevel().String(),
	}
	if l.devices != nil {
		set[launchenv.CUDAVisible] = l.devices[local].visibleID()
	} else {
		if o.UseCPU {
			set[launchenv.UseCPU] = "yes"
			set[launchenv.CUDAVisible] = ""
		}
		// N CPU workers share the machine: give each its share of the
		// cores unless the user chose (torchrun does the same with
		// OMP_NUM_THREADS).
		if _, ok := os.LookupEnv("GOMAXPROCS"); !ok && o.NumProcesses > 1 {
			set["GOMAXPROCS"] = strconv.Itoa(max(1, runtime.NumCPU()/o.NumProcesses))
		}
	}
	for k, v := range o.Env {
		set[k] = v
	}
	env := append(os.Environ(), l.cmd.Env...)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k]) // later entries win (os/exec dedups)
	}
	return env
}

// rdzvConfJSON is RdzvConf for the workers, without the etcd password
// (workers never talk to etcd).
func (l *launch) rdzvConfJSON() string {
	conf := map[string]string{}
	for k, v := range l.opts.RdzvConf {
		if k != "password" {
			conf[k] = v
		}
	}
	if l.opts.RdzvBackend == "static" {
		conf["rank"] = strconv.Itoa(l.nodeRank)
	}
	b, _ := json.Marshal(conf)
	return string(b)
}

// namespace prefixes the store keys of one attempt: the run id, the
// launch's id across nodes (the store may outlive a launch), the mode and
// the restart count.
func (l *launch) namespace(mode string, restart int) string {
	ns := l.opts.RdzvID + "/"
	if l.launchID != "" {
		ns += l.launchID + "/"
	}
	return ns + mode + "-" + strconv.Itoa(restart)
}
