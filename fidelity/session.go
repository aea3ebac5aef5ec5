package fidelity

import (
	"context"

	"github.com/goaccel/goaccel/fidelity/cellrun"
	"github.com/goaccel/goaccel/fidelity/corpus"
	"github.com/goaccel/goaccel/fidelity/gorun"
	"github.com/goaccel/goaccel/fidelity/report"
)

// runSession is Run with Options.Session: go run runs every program
// (opts.Parallel at once), then one engine runs them, one after another in
// discovery order, each as the next cell of the same session, and each is
// judged against its go run as a fresh engine's would be. What a program
// declared stays for the next ones: redefinitions, shadowed names, earlier
// mains, goroutines still running.
func runSession(ctx context.Context, progs []corpus.Program, opts Options, modVersion string, rep *report.Report) error {
	refs := make([]*gorun.Result, len(progs))
	err := inParallel(ctx, len(progs), opts.Parallel, func(ctx context.Context, i int) error {
		p, ref, err := runRef(ctx, progs[i], opts, modVersion)
		rep.Programs[i], refs[i] = p, ref
		return err
	}, nil)
	if err != nil {
		return err
	}

	sess := &cellrun.Session{Binary: opts.Runcell, BuildCache: opts.buildCache}
	defer sess.Close()
	for i, prog := range progs {
		p := rep.Programs[i]
		if refs[i] != nil {
			var err error
			p, err = judgeCell(ctx, prog, p, refs[i], func(dir string) (cellrun.Outcome, error) {
				return sess.Run(ctx, prog.Path, dir, opts.Timeout)
			})
			if err != nil {
				return err
			}
			rep.Programs[i] = p
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(progs), p)
		}
	}
	rep.Restarts = sess.Restarts
	return nil
}
