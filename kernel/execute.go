package kernel

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/goaccel/goaccel/frontend"
)

// execLoop is the execution queue: the one goroutine that runs cells, in
// the order their requests arrived. It ends when ctx ends.
func (k *Kernel) execLoop(ctx context.Context) {
	defer close(k.execDone)
	for {
		select {
		case r := <-k.execQ:
			k.dispatch(ctx, r)
			if r.abortQueue {
				k.abortQueued(ctx)
			}
		case <-ctx.Done():
			return
		}
	}
}

// abortQueued answers every execute_request already queued with status
// "aborted" without running it, as ipykernel does after a failed cell with
// stop_on_error.
func (k *Kernel) abortQueued(ctx context.Context) {
	for {
		select {
		case r := <-k.execQ:
			if ctx.Err() != nil {
				return
			}
			k.log.WithField("msg_id", r.msg.header.MsgID).Info("execute_request aborted (an earlier cell failed)")
			k.publishStatus("busy", r.msg)
			k.reply(r, "execute_reply", map[string]any{
				"status":          "aborted",
				"execution_count": int(k.execCount.Load()),
			})
			k.publishStatus("idle", r.msg)
		default:
			return
		}
	}
}

type executeContent struct {
	Code            string         `json:"code"`
	Silent          bool           `json:"silent"`
	StoreHistory    *bool          `json:"store_history"`
	UserExpressions map[string]any `json:"user_expressions"`
	AllowStdin      *bool          `json:"allow_stdin"`
	StopOnError     *bool          `json:"stop_on_error"`
}

func (k *Kernel) handleExecute(ctx context.Context, r *request) {
	var c executeContent
	if err := decodeContent(r, &c); err != nil {
		k.replyError(r, "BadRequest", err.Error())
		return
	}
	storeHistory := !c.Silent
	if c.StoreHistory != nil {
		storeHistory = *c.StoreHistory && !c.Silent
	}
	allowStdin := c.AllowStdin != nil && *c.AllowStdin
	stopOnError := c.StopOnError == nil || *c.StopOnError
	exprs := map[string]string{}
	for name, v := range c.UserExpressions {
		if s, ok := v.(string); ok {
			exprs[name] = s
		}
	}

	count := int(k.execCount.Load())
	if storeHistory {
		count = int(k.execCount.Add(1))
	}
	if !c.Silent {
		k.publish("execute_input", r.msg, map[string]any{"code": c.Code, "execution_count": count}, nil)
	}

	cellCtx, cancel := context.WithCancel(ctx)
	k.cellMu.Lock()
	k.cellCancel = cancel
	k.cellMu.Unlock()
	io := newCellIO(k, r.msg, allowStdin, cellCtx)
	k.activeIO.Store(io)
	k.commParent.Store(r.msg)

	rep := k.runCell(cellCtx, frontend.ExecuteRequest{
		Code:            c.Code,
		Silent:          c.Silent,
		StoreHistory:    storeHistory,
		AllowStdin:      allowStdin,
		UserExpressions: exprs,
		ExecutionCount:  count,
	}, io)

	k.cellMu.Lock()
	k.cellCancel = nil
	k.cellMu.Unlock()
	cancel()
	io.flush()

	var output *string
	if rep.Result != nil && !c.Silent {
		md := rep.ResultMetadata
		if md == nil {
			md = map[string]any{}
		}
		io.publish("execute_result", map[string]any{
			"execution_count": count, "data": rep.Result, "metadata": md,
		}, nil)
		if t, ok := rep.Result["text/plain"].(string); ok {
			output = &t
		}
	}
	if storeHistory {
		if err := k.hist.add(count, c.Code, output); err != nil {
			k.log.WithError(err).Warn("history not saved")
		}
	}

	payload := rep.Payload
	if payload == nil {
		payload = []map[string]any{}
	}
	ue := rep.UserExpressions
	if ue == nil {
		ue = map[string]any{}
	}
	content := map[string]any{
		"status":           "ok",
		"execution_count":  count,
		"payload":          payload,
		"user_expressions": ue,
	}
	if e := rep.Err; e != nil {
		tb := e.Traceback
		if tb == nil {
			tb = []string{}
		}
		io.publish("error", map[string]any{"ename": e.Name, "evalue": e.Value, "traceback": tb}, nil)
		content["status"] = "error"
		content["ename"] = e.Name
		content["evalue"] = e.Value
		content["traceback"] = tb
		if stopOnError && !c.Silent {
			r.abortQueue = true
		}
	}
	k.reply(r, "execute_reply", content)
}

// runCell calls the interpreter, turning a panic into a cell error.
func (k *Kernel) runCell(ctx context.Context, req frontend.ExecuteRequest, io *cellIO) (rep frontend.ExecuteReply) {
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			k.log.Errorf("interpreter panicked: %v\n%s", p, stack)
			rep = frontend.ExecuteReply{Err: &frontend.Error{
				Name:      "KernelPanic",
				Value:     fmt.Sprint(p),
				Traceback: []string{fmt.Sprintf("panic in the interpreter: %v", p)},
			}}
		}
	}()
	return k.interp.Execute(ctx, req, io)
}
