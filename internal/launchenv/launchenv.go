// Package launchenv names the environment variables through which the
// launcher hands a worker its place in the launch and the accelerate package
// reads it back. It holds only names, so that both sides spell them from
// one place without accelerate importing the launcher.
package launchenv

// torchelastic's names, set by the launcher for every worker.
const (
	Rank           = "RANK"
	LocalRank      = "LOCAL_RANK"
	WorldSize      = "WORLD_SIZE"
	LocalWorldSize = "LOCAL_WORLD_SIZE"
	NodeRank       = "NODE_RANK"
	GroupRank      = "GROUP_RANK"
	MasterAddr     = "MASTER_ADDR"
	MasterPort     = "MASTER_PORT"
	RestartCount   = "TORCHELASTIC_RESTART_COUNT"
	MaxRestarts    = "TORCHELASTIC_MAX_RESTARTS"
	RunID          = "TORCHELASTIC_RUN_ID"
)

// Accelerate's and CUDA's names.
const (
	MixedPrecision = "ACCELERATE_MIXED_PRECISION"
	UseCPU         = "ACCELERATE_USE_CPU"
	CUDAVisible    = "CUDA_VISIBLE_DEVICES"
)

// goaccel's rendezvous names.
const (
	// LaunchSecret is the launch's random secret: the rendezvous store and
	// the ranks admit only processes that know it.
	LaunchSecret = "GOACCEL_LAUNCH_SECRET"
	// RdzvBackend is "static", "c10d" (the first rank able to bind the
	// endpoint hosts the store) or "etcd" (the nodes met in etcd; the store
	// is hosted by node 0's launcher, as with "static").
	RdzvBackend = "GOACCEL_RDZV_BACKEND"
	// RdzvEndpoint is host:port of the rendezvous store (the same as
	// MASTER_ADDR:MASTER_PORT).
	RdzvEndpoint = "GOACCEL_RDZV_ENDPOINT"
	// RdzvNamespace prefixes the store keys of one attempt of one launch
	// (it changes when the group is restarted).
	RdzvNamespace = "GOACCEL_RDZV_NAMESPACE"
)
