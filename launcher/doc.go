// Package launcher is Accelerate's notebook_launcher for Go notebooks: from
// a cell, it runs a training function on every GPU of the machine (or on
// CPU worker processes) and returns what each rank returned.
//
//	results, err := launcher.NotebookLauncher(train, []any{0.01}, launcher.Options{NumProcesses: 2})
//
// Options mirror notebook_launcher's parameters and defaults. The decision
// tree, the guards and the messages are Accelerate's (see
// NotebookLauncherContext), with what Accelerate gets wrong done right:
// MixedPrecision reaches the workers' Accelerator (ACCELERATE_MIXED_PRECISION,
// not the unread MIXED_PRECISION), a bad value is a clean error, more
// processes than GPUs is refused instead of silently oversubscribed,
// ACCELERATE_DEBUG_MODE accepts 1, true and yes, a busy UsePort is reported
// by name (and UsePort "0" picks a free port), worker output is tagged and
// shown live in the cell, failures carry the rank, its panic or exit code
// and its last stderr lines, and the ranks' return values come back.
//
// # Workers
//
// Go cannot fork, so each rank is a fresh process of the goaccel binary
// (os.Executable(), hidden subcommand "worker", which calls WorkerMain; see
// SetWorkerCommand) with its own interpreter. The notebook engine carries the
// function across: in the kernel, Session.Prepare turns the function value
// and its arguments into a payload (the declarations to replay, the global
// variables' values, the arguments); in the worker, WorkerRuntime.Run replays
// it, calls the function and encodes its results, which Session.DecodeResults
// turns back into values in the kernel. With NumProcesses 1 the function is
// simply called in the kernel process (through reflect), as Accelerate does.
//
// A worker gets: stdin from /dev/null; stdout and stderr on pipes the
// launcher reads line by line (a line ends at \n or \r) and publishes in the
// calling cell as they come, each line prefixed by LogLinePrefixTemplate
// ("[rank N] " by default with more than one process); fd 3 (EventsFD), on
// which it writes JSON lines: the display calls made in the worker (a
// display sink installed by WorkerMain forwards display.HTML & co, which the
// launcher republishes under the cell), then its results or its structured
// error; fd 4 (PayloadFD), from which it reads the payload. Its environment
// is the kernel's plus, per rank: RANK (NumProcesses*NodeRank + local rank),
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK,
// ROLE_RANK, ROLE_NAME ("default"), ROLE_WORLD_SIZE, NPROC, MASTER_ADDR and
// MASTER_PORT (the rendezvous store), ACCELERATE_MIXED_PRECISION (and
// Accelerate's MIXED_PRECISION), TORCHELASTIC_RESTART_COUNT,
// TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID (RdzvID), the launch secret
// (EnvLaunchSecret, random per launch), EnvRdzvBackend, EnvRdzvEndpoint,
// EnvRdzvNamespace (changes on every restart), EnvRdzvConf, EnvWorkerMode,
// EnvLauncherPID; CUDA_VISIBLE_DEVICES naming the GPU the rank owns (by
// UUID), or, for CPU workers, GOMAXPROCS set to the worker's share of the
// cores unless the kernel's environment sets it (and with UseCPU
// ACCELERATE_USE_CPU=yes and an empty CUDA_VISIBLE_DEVICES); then
// Options.Env.
//
// # Rendezvous
//
// With the "static" backend the launcher of node 0 hosts the process
// group's rendezvous store (package accelerate/pg) at MasterAddr:UsePort (or
// RdzvEndpoint) for the whole launch; only processes that know the launch
// secret are admitted. With "c10d" the store lives at RdzvEndpoint and the
// first worker able to bind it hosts it. The workers join the group when
// their Accelerator is created (package accelerate reads the variables
// above); with ACCELERATE_DEBUG_MODE set, a pre-flight launch first makes
// every worker join the group, check its device and leave, without running
// the function.
//
// # Across nodes
//
// With NumNodes > 1 a launch spans machines. Each attempt is a round of a
// rendezvous (package launcher/rendezvous) that the launcher of node 0
// leads: the other nodes join it, take their node ranks and say how many
// workers they run; the world size and each node's global ranks follow
// (the processes of lower node ranks come first), and every node learns the
// address of the process group's store and the launch secret. Two ways to
// fill the other nodes:
//
//   - Node agents (RunNode, `goaccel node --rdzv-backend etcd
//     --rdzv-endpoint HOST:PORT --rdzv-id ID --node-rank R
//     --nproc-per-node P`), started once per machine, wait for launches of
//     the run. For each round they join, they connect to node 0's launcher
//     (an authenticated control connection, see control.go), receive the
//     payload its local workers get, start their workers and send back
//     their output, displays (tracker metrics and live charts included)
//     and results; node 0 shows the lines prefixed "[node N rank R] " and
//     returns every rank's results, results[r] being global rank r's. The
//     notebook runs only on node 0.
//   - Accelerate's way: the same notebook runs on every node with its own
//     NodeRank; each node's launcher joins the round, runs its ranks and
//     returns them (results[i] is its local rank i).
//
// Backends: "etcd" (go.etcd.io/etcd): RdzvEndpoint lists the cluster; with
// none, node 0 runs an embedded etcd at MasterAddr:UsePort for the launch
// (data in a temporary directory, removed when the launch ends) and the
// other nodes meet there. Every member's key is bound to a lease
// (RdzvConf lease_ttl, default 10 s), so a node that dies or is cut off is
// named within lease_ttl. The process group's store is then hosted by node
// 0's launcher on MasterAddr (a free port, published in the round).
// "static" and "c10d" keep rounds in the store itself (node 0 hosts it at
// MasterAddr:UsePort, or whichever process binds RdzvEndpoint first).
//
// The launch secret across nodes: with "static" and "c10d" it is the content
// of RdzvConf secret_file, a file every node holds (mode 0600; required).
// With "etcd" node 0 makes a random secret and publishes it in the round:
// anyone who can read the run's keys in etcd (<etcd_prefix>/<RdzvID>/) can
// then join the launch's process group and read the payload. An operator
// must therefore protect etcd: reachable only from the nodes, client TLS
// (RdzvConf protocol, cacert, cert, key) and etcd users (user with password
// or password_file) whose role covers only the run's prefix — or give every
// node the same secret_file, and etcd holds only a nonce the secret is
// derived from (HMAC-SHA256). The embedded etcd has neither TLS nor auth:
// use it on a trusted network, or with secret_file. Connections carrying
// the payload and the tensors are authenticated, not encrypted.
//
// Failures across nodes: a worker that fails anywhere, a node agent whose
// connection closes (killed, crashed) or whose lease expires (frozen, cut
// off), or a node that reports a failure stops every worker on every node;
// the error is a *ChildFailedError naming the rank and its node, or a
// *NodeFailedError naming the node, its host and its global ranks. When a
// failure causes others (peers that saw the failed rank's connection close),
// the root cause is reported. MaxRestarts restarts the group on every node:
// a new round, which agents still up (or restarted) join. Interrupting the
// cell stops every node's workers. An agent killed with SIGKILL leaves no
// worker: its workers have Pdeathsig, as the kernel's have.
//
// # Failures, interrupts and orphans
//
// Worker exits are noticed as they happen. When one fails (panic, non-zero
// exit, signal, or exit without results) the others get SIGTERM at once and
// SIGKILL when MonitorInterval has passed; with MaxRestarts the whole group
// is then started again (the restart count is in TORCHELASTIC_RESTART_COUNT),
// otherwise a *ChildFailedError describes the first failure. Cancelling the
// context (interrupting the cell) sends SIGINT (the worker cancels the
// context given to WorkerRuntime.Run), SIGTERM after 2 s and SIGKILL after
// 4 s. Every worker leads its own process group, which receives the signals,
// and has Pdeathsig SIGKILL, armed on a thread that lives as long as the
// worker: if the kernel dies (kill -9, kernel restart) its workers die with
// it. Every worker is reaped, and what it left in its process group is
// killed, before the launcher returns.
//
// # Process-wide state
//
// The cell calls NotebookLauncher with nothing but its function, so the
// engine installs what the launcher needs process-wide, as it does for
// display.SetSink: SetSession once, and SetCell for each running cell (its
// context, which is cancelled on interrupt, and its Publisher).
// NotebookLauncherContext and LaunchWorkers take the context explicitly.
//
// Multi-process launches and node agents need Linux.
package launcher
