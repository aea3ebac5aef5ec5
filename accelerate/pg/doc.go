// Package pg is goaccel's process group: the rendezvous store and the
// collective operations that worker processes started by the launcher use to
// talk to each other. It is the Go counterpart of torch.distributed's gloo
// backend as Accelerate uses it (init_process_group + TCPStore).
//
// # Rendezvous
//
// A [Store] is a small authenticated TCP key-value server. The launcher hosts
// one at MASTER_ADDR:MASTER_PORT ("static" rendezvous); with the "c10d"
// backend the first worker that manages to bind the endpoint hosts it
// ([Config].HostStore) and the others connect to it. Every connection, to the
// store and between ranks, starts with a mutual HMAC-SHA256 challenge over the
// launch secret: a process that does not know the secret is refused (the store
// logs why) and the joining side gets an error wrapping [ErrAuth].
//
// [Join] registers the rank's data-plane listen address in the store, then
// connects every pair of ranks directly over TCP (a full mesh: the lower rank
// listens, the higher rank dials). Once every rank is connected the store is no
// longer used; a store hosted by a rank is closed when [Join] returns.
//
// # Collectives
//
// A [Group] runs one collective at a time; every rank must call the same
// collectives in the same order (as with torch.distributed). Each message
// carries a small header (operation, element type, sequence number, length),
// so a rank that calls a different collective is reported instead of
// corrupting data. Large all-reduces use a pipelined ring (reduce-scatter then
// all-gather over the ring links rank r → r+1), small ones a direct all-to-all
// exchange. Buffers travel as their in-memory bytes (no per-element encoding);
// the wire byte order is the host's, and [Join] refuses a group mixing byte
// orders. [Group.AllReduceFloat16] and [Group.AllReduceBFloat16] reduce
// 16-bit values (bit patterns in []uint16) with the same algorithms and
// 16-bit wire values, each partial result computed in float32 and rounded
// back to 16 bits (the fp16/bf16 comm hooks of package accelerate/ddp).
// Reductions are performed in a fixed order, so every rank ends with
// bitwise identical results.
//
// Sharded training's two halves of an all-reduce are there on their own
// (scatter.go), with torch.distributed's semantics:
// [Group.ReduceScatterFloat32] leaves rank i the reduced chunk i of a
// buffer of Size() chunks (reduce_scatter_tensor), and
// [Group.AllGatherFloat32] puts rank i's share at chunk i of every rank's
// buffer (all_gather_into_tensor, in place when the share is that chunk);
// float64 and 16-bit variants too. Large buffers take the same pipelined
// ring, one phase of it; small ones a direct exchange.
//
// Every operation is bounded: by the context and by the group timeout
// ([DefaultTimeout], Accelerate's gloo default of 1800 s, settable). A rank
// that does not join, does not answer or closes its connection yields a
// [*RankError] naming it ("rank 1 did not join within 30s", "rank 3 closed its
// connection during all_reduce"). After a failed collective the group is
// broken: its connections are closed (so the other ranks fail fast instead of
// waiting for the timeout) and every later call returns the first error.
package pg
