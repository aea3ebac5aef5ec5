package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/goaccel/goaccel/fidelity/cellrun"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook"
)

// serve runs the programs cellrun.Session requests, one after another, as
// cells of one engine: execution counts go on from program to program, and
// what a program declared stays for the next, as in a kernel a user keeps.
func serve(maxOutput int, buildCache string, start time.Time) error {
	requests := os.NewFile(3, "requests")
	acks := os.NewFile(4, "acks")
	if requests == nil || acks == nil {
		return fmt.Errorf("-session needs the request and reply pipes as fds 3 and 4")
	}
	engine, err := startEngine(buildCache)
	if err != nil {
		return err
	}
	defer closeEngine(engine)
	in := bufio.NewScanner(requests)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	count := 0
	for in.Scan() {
		var req cellrun.Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return fmt.Errorf("reading a request: %w", err)
		}
		count++
		expired, err := runRequest(engine, req, count, maxOutput, start)
		if err != nil {
			return err
		}
		ack := cellrun.AckDone
		if expired {
			ack = cellrun.AckTimedOut
		}
		if _, err := fmt.Fprintln(acks, ack); err != nil {
			return err
		}
	}
	return in.Err()
}

// runRequest runs one program as cell number count and records it;
// expired reports that the cell was interrupted at the request's timeout.
func runRequest(engine *notebook.Engine, req cellrun.Request, count, maxOutput int, start time.Time) (expired bool, err error) {
	src, err := os.ReadFile(req.Source)
	if err != nil {
		return false, err
	}
	if err := os.Chdir(req.Dir); err != nil {
		return false, err
	}
	f, err := os.OpenFile(req.Events, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	rec := cellrun.NewRecorder(f, start, maxOutput)
	rec.Ready()
	ctx, cancel := context.WithTimeout(context.Background(), req.Timeout)
	defer cancel()
	rec.Reply(engine.Execute(ctx, frontend.ExecuteRequest{Code: string(src), StoreHistory: true, ExecutionCount: count}, rec))
	if err := rec.Err(); err != nil {
		return false, fmt.Errorf("recording the cell: %w", err)
	}
	return ctx.Err() != nil, nil
}
