// Package nn is a small compiled model toolkit for notebook cells: a
// multi-layer perceptron whose parameters and gradients live in flat float64
// buffers (so that Accelerator.Prepare wraps it in a *ddp.DDP), a softmax
// cross-entropy loss, SGD and Adam optimizers and a mini-batch helper.
//
// It exists because cells run in yaegi: interpreted arithmetic is 100-500x
// slower than compiled Go, and a value of a type declared in a cell loses its
// methods when it is passed to compiled code as `any`, so a cell-declared
// model would not be recognised as a ddp.Model by Prepare. Here the numeric
// work (gonum matrix products) and the parameter storage are compiled, while
// the training loop stays in the cell, in the order PyTorch users know:
//
//	model, _ := nn.NewMLP([]int{2, 32, 32, 2}, nn.Tanh, seed)
//	opt := nn.NewAdam(model, 0.01)
//	out, _ := acc.Prepare(model, opt)    // out[0] is a *ddp.DDP
//	for step := 0; step < steps; step++ {
//	    xb, yb := nn.Batch(X, Y, idx)      // this process's share of the global batch
//	    opt.ZeroGrad()
//	    logits := model.Forward(xb)
//	    loss, dlogits := nn.CrossEntropy(logits, yb)
//	    model.Backward(dlogits)            // loss.backward()
//	    acc.SyncGradients(out[0])          // all-reduce: mean over processes
//	    opt.Step()
//	}
//
// The loss is a mean over the batch, so averaging the gradients of equal-size
// local batches across processes gives exactly the gradient of the global
// batch (up to floating-point rounding): data-parallel training with a global
// batch B on n processes follows single-process training with batch B.
//
// # Mixed precision
//
// Go has no autocast. [MLP.SetPrecision] with "bf16" or "fp16" simulates
// torch.autocast for the linear layers: their inputs, weights and outputs
// are rounded to the 16-bit format (package amp) while the master weights,
// the gradients and the optimizer state stay float64, as with Accelerate's
// mixed precision.
//
// Shape mismatches (an input with the wrong number of columns, a gradient of
// the wrong shape, labels out of range) panic, as gonum's matrix operations
// do; in a cell the panic becomes the cell's error.
package nn
