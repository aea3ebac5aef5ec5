package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/internal/allocator"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/rendezvous"
	"github.com/goaccel/goaccel/launcher/slurm"
)

// runNode is `goaccel node`: a node agent that runs the workers of
// launches made by a notebook on another machine.
func runNode(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("rdzv-backend", "etcd", "rendezvous `backend`: etcd, static or c10d (the notebook's RdzvBackend)")
	endpoint := fs.String("rdzv-endpoint", "", "where the nodes meet: etcd's `host:port` (comma-separated; node 0's MasterAddr:UsePort for its embedded etcd), or the store's")
	id := fs.String("rdzv-id", launcher.DefaultRdzvID, "the run `id` (the notebook's RdzvID)")
	var conf multiFlag
	fs.Var(&conf, "rdzv-conf", "`KEY=VALUE` of the notebook's RdzvConf (repeatable): secret_file (- reads the secret from standard input), lease_ttl, join_timeout, etcd_prefix, protocol, cacert, cert, key, user, password_file")
	rank := fs.Int("node-rank", -1, "this node's `rank` in every launch (1 or more); -1 takes the lowest free one")
	nproc := fs.Int("nproc-per-node", 0, "worker processes on this node (`N`); 0 runs as many as the notebook's NumProcesses")
	host := fs.String("host", "", "the `address` this node is named by (default: its address towards the endpoint)")
	logFile := fs.String("log-file", os.Getenv("GOACCEL_LOG_FILE"), "write the log to `path` instead of stderr")
	logLevel := fs.String("log-level", envOr("GOACCEL_LOG_LEVEL", "info"), "log `level` (debug, info, warn, error)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	_ = allocator.Reexec() // the workers this node starts inherit tcmalloc (see package allocator)
	rdzvConf, err := parseConf(conf)
	if err != nil {
		return err
	}
	if rdzvConf["secret_file"] == "-" {
		// The secret on standard input (srun passes it to every node's
		// agent that way when a notebook in a Slurm job launches): kept in
		// a private file of this node while the agent runs.
		path, err := secretFromStdin(os.Stdin)
		if err != nil {
			return err
		}
		defer os.Remove(path)
		rdzvConf["secret_file"] = path
	}
	lvl, err := logrus.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	// The agent's own log (and its workers' entries, which it receives):
	// a terminal or a file, there is no cell here.
	logrus.SetLevel(lvl)
	logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05.000"})
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("opening log file: %w", err)
		}
		defer f.Close()
		logrus.SetOutput(f)
	}
	rendezvous.RouteGRPCLogs(logrus.StandardLogger())
	configurePJRT(logrus.StandardLogger()) // the workers this node starts run GoMLX too
	installLaunchProbes()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := nodeFromSlurm(ctx, fs, nproc, host, os.Getenv); err != nil {
		return err
	}
	return launcher.RunNode(ctx, launcher.NodeOptions{
		RdzvBackend: *backend, RdzvEndpoint: *endpoint, RdzvID: *id, RdzvConf: rdzvConf,
		NodeRank: *rank, NProcPerNode: *nproc, Host: *host,
	})
}

// nodeFromSlurm fills what the flags left out from the Slurm job step the
// agent runs in: one worker per GPU of this node (SLURM_GPUS_ON_NODE), and
// this node's address from Slurm's configuration when its name does not
// resolve (the rendezvous endpoint, the notebook's, still comes as a flag).
func nodeFromSlurm(ctx context.Context, fs *flag.FlagSet, nproc *int, host *string, getenv func(string) string) error {
	a, ok, err := slurm.FromEnv(getenv)
	if err != nil || !ok {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["nproc-per-node"] && a.GPUs > 0 {
		*nproc = a.GPUs
	}
	if name := getenv("SLURMD_NODENAME"); !given["host"] && name != "" {
		addr, err := slurm.NodeAddress(ctx, name)
		if err != nil {
			return err
		}
		*host = addr
	}
	return nil
}

// secretFromStdin reads a secret from r into a new private file.
func secretFromStdin(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1<<16))
	if err != nil {
		return "", fmt.Errorf("--rdzv-conf secret_file=-: reading the secret from standard input: %w", err)
	}
	f, err := os.CreateTemp("", "goaccel-node-secret-*")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// parseConf turns KEY=VALUE flags into a map.
func parseConf(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errors.New("--rdzv-conf " + kv + ": want KEY=VALUE")
		}
		m[k] = v
	}
	return m, nil
}
