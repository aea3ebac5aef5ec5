package fidelity

import (
	"context"
	"fmt"
	"sync"

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
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range opts.Parallel {
		wg.Go(func() {
			for i := range jobs {
				p, ref, err := runRef(ctx, progs[i], opts, modVersion)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				rep.Programs[i], refs[i] = p, ref
				mu.Unlock()
			}
		})
	}
feed:
	for i := range progs {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fidelity: %w", err)
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
