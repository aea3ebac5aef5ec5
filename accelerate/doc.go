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
// # Trackers
//
// [WithLogWith] selects experiment trackers (Accelerate's log_with: "all",
// names, tracking.LoggerType values, tracking.GeneralTracker instances),
// checked by NewAccelerator with Accelerate's errors; [WithProjectDir] and
// [WithProjectConfiguration] give the logging directory.
// [Accelerator.InitTrackers] builds and starts them on the main process and
// adds the live chart (package tracking/livechart: every logged metric drawn
// under the running cell; [WithLiveChart] or GOACCEL_LIVECHART=0 turn it
// off); the other processes get tracking.NoOp trackers. [Accelerator.Log],
// LogImages and LogTable log on the main process only, GetTracker returns a
// tracker by name, and [Accelerator.EndTraining] finishes (flushes) every
// tracker before tearing down the process group.
//
//	acc, err := accelerate.NewAccelerator(
//	    accelerate.WithLogWith("tensorboard", "dvclive"),
//	    accelerate.WithProjectDir("runs"))
//	err = acc.InitTrackers("my_project", map[string]any{"lr": 1e-3}, nil)
//	err = acc.Log(map[string]any{"loss": loss}, step, nil)
//	err = acc.EndTraining()
//
// # Kwargs handlers
//
// [WithKwargsHandlers] takes the handlers of package accelerate/kwargs,
// validated at NewAccelerator (kwargs.ValidateHandlers; their notes are
// printed by the main process). InitProcessGroupKwargs is applied before the
// group is joined (timeout of the rendezvous and of every collective,
// backend check, tcp:// init_method); DistributedDataParallelKwargs
// configures Prepare; GradScalerKwargs the fp16 [Accelerator.GradScaler];
// ProfileKwargs the default of [Accelerator.Profile]; AutocastKwargs and
// FP8RecipeKwargs are reported ([Accelerator.Autocast],
// [Accelerator.FP8Recipe]: goaccel has no operator-level autocast and no FP8
// engine).
//
// # Prepare
//
// [Accelerator.Prepare] returns its arguments in order, with models
// (accelerate/ddp's Model or Model32) wrapped in a *ddp.DDP over the
// process group (a ddp.Reducer adapter that also offers ddp.Reducer16, the
// 16-bit ring all-reduce of the fp16/bf16 comm hooks) and [Shardable] data
// sources replaced by their shard; other values pass through, as in
// Accelerate. After each backward pass call [Accelerator.SyncGradients] (or
// the DDP's own) on every process. Slices are sharded explicitly with
// [Accelerator.PrepareData], SplitBetweenProcesses or SplitIndices.
//
//	out, err := acc.Prepare(model, optimizer)
//	ddpModel := out[0].(*ddp.DDP)
//	for _, i := range acc.SplitIndices(len(data), true) {
//	    forwardBackward(model, data[i])       // fills model.Gradients()
//	    err = acc.SyncGradients(ddpModel)     // averaged across processes
//	    optimizer.Step()
//	}
//
// [Accelerator.Profile] runs a function under the profiler of package
// accelerate/profiler, exports profile_{rank}.json and waits for every
// process, as Accelerate's profile context manager.
//
// # Training that survives
//
// [Accelerator.SaveState] and [Accelerator.LoadState] checkpoint what
// Prepare saw (models, optimizers), the loss scaler, every process's
// generator ([RNG]) and step counter, and the objects registered with
// [Accelerator.RegisterForCheckpointing]; with automatic checkpoint naming
// ([ProjectConfiguration]) they use ProjectDir/checkpoints/checkpoint_K
// (package accelerate/checkpoint makes a checkpoint visible only when
// complete). [Accelerator.SaveModel] and [LoadModel] write and read
// safetensors (package accelerate/safetensors). [Accelerator.Accumulate]
// (with [WithGradientAccumulationSteps]), [Accelerator.ClipGradNorm],
// [Accelerator.ClipGradValue], [Accelerator.GatherForMetrics] and
// [SetSeed] complete Accelerate's training loop. Files: training.go,
// savestate.go, loadstate.go, modelio.go, metrics.go, seed.go.
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
// registry), env.go (environment), options.go, collectives.go, split.go,
// trackers.go, handlers.go, prepare.go, profile.go.
//
// Trackers, kwargs handlers and the gradient scaler belong to each
// Accelerator, as in Accelerate; InitProcessGroupKwargs only acts in the
// first NewAccelerator of a process (the one that joins the group).
package accelerate
