// Package ddp is goaccel's data-parallel wrapper, the counterpart of
// torch.nn.parallel.DistributedDataParallel as Accelerate configures it with
// kwargs.DistributedDataParallelKwargs.
//
// A model is anything that exposes its parameters and gradients as flat
// buffers ([Model] for float64, [Model32] for float32); the collectives come
// from a [Reducer], which the Accelerator adapts from its process group.
//
//	d, err := ddp.Wrap(model, reducer, kw)  // broadcasts rank 0's parameters
//	for batch := range shard {
//	    forward/backward(model, batch)      // fills model.Gradients()
//	    if err := d.SyncGradients(); err != nil { ... } // averages them across ranks
//	    optimizer.Step()
//	}
//
// # What the wrapper does
//
//   - Wrap broadcasts rank 0's parameters (and buffers, see [Buffered]) to
//     every rank, so all replicas start identical (torch's DDP does this on
//     construction whatever broadcast_buffers says).
//   - SyncGradients averages the gradients in buckets of at most
//     bucket_cap_mb MiB (gradients packed in reverse parameter order, as
//     torch does; a tensor larger than the cap gets a bucket of its own): one
//     collective per bucket. The result is bitwise identical on every rank.
//   - comm_hook "fp16"/"bf16": every bucket is divided by the world size,
//     rounded to IEEE half / bfloat16 (nearest, ties to even) and exchanged
//     as 16-bit values with Reducer.AllGatherBytes (2 bytes per element on
//     the wire, half of float32); each rank sums the decoded values in
//     float32 in rank order. This is torch's fp16_compress_hook /
//     bf16_compress_hook, with the sum done in float32 rather than in 16 bits.
//     When the Reducer also implements [Reducer16] (the Accelerator's process
//     group does) the 16-bit buckets are summed by it instead, in a ring
//     whose wire values are 16 bits (buckets of 32 KiB or less: one direct
//     exchange) (each partial sum rounded to 16 bits, as
//     torch all-reduces the float16 tensor): about 2·(n-1)/n × 2 bytes per
//     element per rank for any world size n, against (n-1) × 2 bytes for the
//     all-gather, which sends more than a float32 ring once n > 4.
//   - comm_hook "power_sgd": torch's PowerSGD (Vogels et al. 2019) with
//     PowerSGDState's options from comm_state_option
//     (matrix_approximation_rank, start_powerSGD_iter, min_compression_rate,
//     use_error_feedback, warm_start, orthogonalization_epsilon,
//     random_seed): vanilla averaging for the first start_powerSGD_iter
//     steps, then every gradient that is a matrix ([Shaped]) and worth
//     compressing is replaced by the rank-r approximation P Qᵀ of the average
//     (two small all-reduces for P and Q), the rest averaged exactly; with
//     error feedback the local compression error is added to the next step's
//     gradient. Without [Shaped] every tensor is a vector and nothing is
//     compressed. "batched_power_sgd" views each whole bucket as a square
//     matrix (zero-padded) and needs no shapes.
//   - comm_wrapper "fp16"/"bf16" (with a PowerSGD hook): the P, Q and
//     uncompressed all-reduces travel as 16-bit values too. With the fp16 /
//     bf16 hooks the wrapper only adds a rounding step; with comm_hook "no"
//     it is ignored, as in Accelerate.
//   - NoSync runs a function with gradient synchronisation off, for gradient
//     accumulation (torch's no_sync()).
//
// find_unused_parameters, check_reduction, gradient_as_bucket_view and dim
// are accepted and have no effect (every gradient buffer is reduced every
// step, buckets are reused, batches are sharded by the data loader);
// static_graph only changes the wording of the error when the gradient
// layout changes after Wrap (the layout is fixed either way).
package ddp
