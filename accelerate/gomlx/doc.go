// Package gomlx trains GoMLX models (github.com/gomlx/gomlx) under
// Accelerate: written in notebook cells, trained in the notebook's own
// process or on the worker processes NotebookLauncher and DebugLauncher
// start, with Accelerate's guarantees.
//
// A GoMLX model is a context.Context of variables and a train.ModelFn;
// NewTrainer takes them, the loss, the optimizer and the metrics as
// train.NewTrainer does, with the current process's Accelerator first:
//
//	acc, _ := accelerate.NewAccelerator(accelerate.WithMixedPrecision("bf16"))
//	tr, err := gomlx.NewTrainer(acc, backend, ctx, modelFn,
//	    losses.SparseCategoricalCrossEntropyLogits, optimizers.Adam().Done(),
//	    trainMetrics, evalMetrics)
//	loop := gomlx.NewLoop(tr) // a *train.Loop: metrics to acc.Log, a progress bar
//	_, err = loop.RunSteps(gomlx.ShardDataset(acc, trainDS), 1000)
//
// # How a step runs
//
// GoMLX computes and applies gradients in one graph. Accelerate needs them
// in between: averaged across processes, accumulated, unscaled. So with
// several processes, gradient accumulation, fp16's loss scaler or
// divergence checks, a step is two graphs. The training graph (GoMLX's
// train.Trainer, whose optimizer is this package's) computes the loss, the
// metrics and the gradients of the trainable variables, and leaves the
// gradients in variables of its own. The Trainer then copies them to the
// host, where accelerate/ddp all-reduces them in buckets with the comm hook
// of DistributedDataParallelKwargs (fp16 or bf16 compression, PowerSGD),
// and Accelerate's GradScaler acts on them. The update graph clips them
// (WithClipGradNorm, WithClipGradValue) and applies them with the optimizer
// (its UpdateGraphWithGradients, which GoMLX's SGD and Adam and AdamW here
// have) to float32 master copies of the variables, and writes the model's
// variables from them. When none of that is needed and the model computes
// in float32, the update runs inside the training graph instead, the
// model's variables being their own masters (fused.go): one graph a step,
// the same numbers.
//
// The model's variables live in the context the user gave; the masters,
// the optimizer's state and the global step in a context of the Trainer
// (Masters). With mixed precision "bf16" or "fp16" the model computes in
// that dtype: the Trainer converts the model's floating-point inputs to it,
// so GoMLX's layers create and use variables of that dtype, and converts
// its predictions back to float32 for the loss; the masters stay float32.
// "fp16" scales the loss with the Accelerator's GradScaler
// (GradScalerKwargs) and skips the steps whose gradients overflow.
//
// Every process starts from process 0's initial variables: the first
// training graph initializes the model's variables, and the Trainer
// broadcasts process 0's values (accelerate.PrepareModel) before the first
// step runs.
//
// # What Accelerate's options do here
//
//   - WithGradientAccumulationSteps(n): gradients of n micro-batches are
//     averaged on the host with no all-reduce in between (Accumulate's
//     no_sync); the n-th micro-batch all-reduces and steps.
//   - WithMixedPrecision: see above. fp8 is refused.
//   - DistributedDataParallelKwargs: bucket_cap_mb, comm_hook,
//     comm_wrapper, PowerSGD options, as for any prepared model.
//   - GradScalerKwargs: the fp16 loss scaler's initial scale, growth and
//     backoff.
//   - SaveState, LoadState and SaveModel include the Trainer: the masters
//     as the model (model.safetensors, named by scope and variable), the
//     optimizer's state and the global step as optimizer.safetensors; a
//     restarted launch that loads them resumes bit for bit.
//   - ACCELERATE_DEBUG_MODE: every 50 steps (WithDivergenceCheck) each
//     process compares a checksum of every master with process 0's; a
//     difference is an error naming the process and the variable.
//   - FSDP (accelerate/fsdp: WithFSDPPlugin or ACCELERATE_USE_FSDP):
//     SHARD_GRAD_OP shards the float32 masters and the optimizer state
//     (see shard.go: reduce-scatter, an update of this process's share,
//     all-gather); FULL_SHARD also keeps the parameters as shares between
//     steps, the whole model being one FSDP unit (fullshard.go: gathered
//     before a step, Eval, or GatherParameters for Predict and Generate;
//     released after); HYBRID_SHARD and HYBRID_SHARD_ZERO2 do the same
//     within each node and replicate across nodes (hybrid.go). SaveState
//     gathers the whole state or writes each process's share
//     (SHARDED_STATE_DICT), LoadState takes this process's share of it, on
//     any number of processes. The plugin's mixed-precision policy sets
//     the compute dtype and the dtype of the gradients' reduction
//     (policy.go); fp16's scaler decides on every share's verdict. NO_SHARD
//     is DDP.
//
// # Transformers
//
// AdamW is torch.optim.AdamW with weight decay on the variables a Decay
// selects (DecayMatrices: nanoGPT's rule); WithLRSchedule sets the
// learning rate of every optimizer step from a Schedule (WarmupCosine is
// nanoGPT's), by the global step that LoadState restores; Generate samples
// from a causal language model with a temperature and top-k; ComputeDType
// tells a model of token ids which dtype mixed precision computes in.
// Package vjp (installed by importing this one) gives GoMLX's matrix
// products gradients that are matrix products: GoMLX v0.26.0's made a
// small GPT 15-25 times slower (README: what made a GPT slow).
//
// # Data
//
// ShardDataset gives each process its 1/N of every global batch of a
// train.Dataset, as Accelerate's prepared DataLoader with split_batches; a
// batch that N does not divide is an error, and so are processes that draw
// different global batches (checked on the first batch of each pass). Eval
// evaluates each process's shard and averages the metrics over the
// processes.
//
// # Backends
//
// Backend picks XLA when goaccel found a PJRT plugin (package pjrt; the CPU
// one is installed by make lab, the CUDA one from JAX's jax[cuda12]) and
// otherwise GoMLX's pure-Go backend, saying once why. The pure-Go backend
// trains dense models only: GoMLX v0.26.0 lacks the gradients of
// convolution and max-pooling there.
//
// This package is built against GoMLX v0.26.0 (goaccel's go.mod); a
// session that moved GoMLX to another version gets an error saying so from
// NewTrainer.
package gomlx
