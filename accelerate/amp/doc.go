// Package amp is goaccel's mixed-precision support: the dynamic loss scaler
// configured by kwargs.GradScalerKwargs ([GradScaler], torch.amp.GradScaler's
// algorithm) and exact float32 ↔ float16 / bfloat16 conversions with
// round-to-nearest-even ([Float32ToFloat16], [Float32ToBFloat16], ...), used
// by the data-parallel wrapper's 16-bit gradient compression and to simulate
// reduced-precision arithmetic ([Simulate]).
//
// Go has no half-precision arithmetic: fp16/bf16 training in goaccel means
// values rounded to 16-bit precision between float32 operations, which is
// what the rounding helpers provide.
package amp
