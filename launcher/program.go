package launcher

import (
	"context"
	"errors"
	"fmt"

	"github.com/goaccel/goaccel/frontend"
)

// LaunchProgram is `accelerate launch` for a Go program: it runs argv (a
// built program and its arguments) as opts.NumProcesses worker processes on
// this node, each with the environment launched workers get (RANK,
// WORLD_SIZE, MASTER_ADDR, the launch secret, ... see the package
// documentation), so that accelerate.NewAccelerator() in the program joins
// the process group. Their output goes to pub line by line, prefixed by
// rank; a rank that fails stops the others and the error names it
// (*ChildFailedError); the group restarts up to opts.MaxRestarts times.
// NumProcesses 0 is one process per visible GPU, or one without GPUs (as
// accelerate launch). Unlike NotebookLauncher, one process is a worker
// too (the caller is not the program).
func LaunchProgram(ctx context.Context, argv []string, opts Options, pub frontend.Publisher) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("launcher: no program to launch")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if o.NumProcesses < 0 {
		return fmt.Errorf("launcher: NumProcesses must not be negative, got %d", o.NumProcesses)
	}
	var devs []GPU
	if !o.UseCPU {
		if devs, err = currentProbes().GPUs(); err != nil {
			return fmt.Errorf("launcher: listing the GPUs: %w", err)
		}
	}
	if o.NumProcesses == 0 {
		o.NumProcesses = max(len(devs), 1)
	}
	if len(devs) > 0 && o.NumProcesses > len(devs) {
		return fmt.Errorf("launcher: %d processes but only %d GPU(s) are visible; use at most %d, or --cpu for CPU workers", o.NumProcesses, len(devs), len(devs))
	}
	restore := SetWorkerCommand(WorkerCommand{Path: argv[0], Args: argv[1:]})
	defer restore()
	l, err := newLaunch(o, devs, pub)
	if err != nil {
		return err
	}
	defer l.close()
	_, err = l.run(ctx, modeProgram, nil, nil)
	return err
}

// Validate reports what is wrong with o (a mixed-precision mode Accelerate
// does not know, a rendezvous backend without what it needs, ...), as a
// launch would, before anything starts.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}
