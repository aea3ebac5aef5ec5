// Package accelerate is the user-facing API that notebook cells and the
// workers started by goaccel's launcher use: the Go counterpart of
// HuggingFace Accelerate's Accelerator/PartialState for CPU and GPU
// processes (see /work/shared/reference/accelerate.md).
//
// A worker process calls [NewAccelerator]; it reads the environment the
// launcher set (RANK, WORLD_SIZE, MASTER_ADDR, ... see env.go), joins the
// process group (package accelerate/pg) when WORLD_SIZE > 1, and exposes the
// process's place in the group (ProcessIndex, IsMainProcess, Device, ...) and
// the collectives Accelerate offers (WaitForEveryone, Gather, Reduce,
// Broadcast, SplitBetweenProcesses, MainProcessFirst, ...).
//
// Cells run in yaegi, which cannot call generic functions of compiled
// packages, so every operation has a non-generic method (GatherFloat64s,
// GatherObject, SplitIndices, ...); the few generic helpers ([Split]) are for
// compiled code only.
//
// # Process-wide state
//
// Like Accelerate's AcceleratorState._shared_state, the first NewAccelerator
// in a process creates process-wide state (rank, precision, the process
// group) that every later Accelerator in the process shares. This is
// deliberate global state: the launcher checks [StateInitialized] in the
// kernel process and refuses a multi-process launch once a cell has created
// an Accelerator, exactly as notebook_launcher does; %reset calls
// [ResetState]. Files: accelerator.go (type and lifecycle), state.go (the
// registry), env.go (environment), options.go, collectives.go, split.go.
package accelerate
