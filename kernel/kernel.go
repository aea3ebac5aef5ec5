// Package kernel is goaccel's Jupyter messaging layer: it binds the five
// ZeroMQ sockets of a connection file (shell, control, stdin, iopub, hb),
// signs and checks messages (HMAC-SHA256), dispatches requests of protocol
// 5.4 through a msg_type → handler table, runs cells one at a time through
// an execution queue, publishes their output on IOPub (stream output
// coalesced), keeps the execution history in a file across restarts, and
// hosts comms.
//
// It knows nothing of the cell language: it talks to it only through the
// Interpreter interface, using the vocabulary of package frontend.
//
// Behaviour worth knowing:
//   - Every request gets busy/idle status on IOPub with the request as
//     parent, kernel_info included. Replies go to the requesting identity on
//     the socket the request came in on.
//   - execute_request runs on one goroutine, in order. Other shell requests
//     (complete, inspect, is_complete, history, kernel_info, comm_*) are
//     answered while a cell runs; control requests are answered on their own
//     goroutine at any time.
//   - A message with a bad or missing signature is dropped and logged.
//     Malformed messages and unknown foo_request types get a foo_reply with
//     status "error".
//   - debug_request (JEP 47) goes to the interpreter when it implements
//     Debugger; its events are published as debug_event with the latest
//     debug_request as parent. Otherwise debug_request is answered with
//     status "error" and kernel_info says "debugger": false.
//   - Each new IOPub subscriber first receives an iopub_welcome (JEP 65).
//   - No "starting" status is published: nobody can be subscribed yet, and
//     a late one would precede the welcome.
package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/frontend"
)

// Options configure a Kernel.
type Options struct {
	// Logger receives the kernel's log; nil discards it. The kernel never
	// uses logrus' global logger and never writes to stdout.
	Logger *logrus.Logger
	// HistoryPath is the history file. Empty means DefaultHistoryPath();
	// "-" keeps history in memory only.
	HistoryPath string
	// ImplementationVersion is kernel_info_reply's implementation_version.
	ImplementationVersion string
}

// Kernel is one running Jupyter kernel.
type Kernel struct {
	log     *logrus.Logger
	interp  Interpreter
	dbg     Debugger // nil when the interpreter cannot be debugged
	conn    ConnectionInfo
	sg      signer
	session string
	version string
	hist    *history
	comms   *commRegistry

	shell, control, stdin, iopub, hb *zsock

	handlers map[string]handler

	iopubMu sync.Mutex // every subscriber sees IOPub messages in one order

	execQ     chan *request
	execCount atomic.Int64
	execDone  chan struct{}

	cellMu     sync.Mutex
	cellCancel context.CancelFunc
	activeIO   atomic.Pointer[cellIO]
	commParent atomic.Pointer[message]
	dbgParent  atomic.Pointer[message] // the latest debug_request

	inputMu      sync.Mutex // one input_request at a time
	pendingMu    sync.Mutex
	pendingInput chan string

	stop     chan struct{} // closed when Run must return
	stopOnce sync.Once
	running  atomic.Bool
	closed   atomic.Bool
}

// request is one received message and where it came from.
type request struct {
	sock    *zsock
	channel string
	msg     *message
	// shutdown is set by the shutdown handler: Run returns once the idle
	// status for this request is out.
	shutdown bool
	// abortQueue is set by the execute handler when a failed cell had
	// stop_on_error: the queued execute requests are then aborted.
	abortQueue bool
}

type handler func(ctx context.Context, r *request)

// New binds the sockets of conn and prepares the kernel; Run serves it.
// Ports 0 in conn pick free ports (see ConnectionInfo).
func New(conn ConnectionInfo, interp Interpreter, opts Options) (*Kernel, error) {
	if interp == nil {
		return nil, errors.New("kernel: nil Interpreter")
	}
	if err := conn.Validate(); err != nil {
		return nil, fmt.Errorf("kernel: connection info: %w", err)
	}
	sg, err := newSigner(conn.SignatureScheme, []byte(conn.Key))
	if err != nil {
		return nil, fmt.Errorf("kernel: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = logrus.New()
		log.Out = discard{}
	}
	k := &Kernel{
		log:      log,
		interp:   interp,
		sg:       sg,
		session:  uuid.NewString(),
		version:  opts.ImplementationVersion,
		execQ:    make(chan *request, 1024),
		execDone: make(chan struct{}),
		stop:     make(chan struct{}),
	}
	if k.version == "" {
		k.version = "0.0.0"
	}

	hpath := opts.HistoryPath
	switch hpath {
	case "-":
		hpath = ""
	case "":
		if hpath, err = DefaultHistoryPath(); err != nil {
			log.WithError(err).Warn("history kept in memory only")
			hpath = ""
		}
	}
	hist, warnings, err := openHistory(hpath)
	if err != nil {
		log.WithError(err).Warn("history file unusable; history kept in memory only")
		hist, _, _ = openHistory("")
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	k.hist = hist

	bind := func(name string, kind sockKind, port int) (*zsock, error) {
		return listen(name, kind, conn.Transport, conn.IP, port, log)
	}
	var socks []*zsock
	fail := func(err error) (*Kernel, error) {
		for _, s := range socks {
			s.close(0)
		}
		return nil, fmt.Errorf("kernel: %w", err)
	}
	for _, b := range []struct {
		dst  **zsock
		name string
		kind sockKind
		port *int
	}{
		{&k.shell, "shell", kindRouter, &conn.ShellPort},
		{&k.control, "control", kindRouter, &conn.ControlPort},
		{&k.stdin, "stdin", kindRouter, &conn.StdinPort},
		{&k.iopub, "iopub", kindPub, &conn.IOPubPort},
		{&k.hb, "hb", kindEcho, &conn.HBPort},
	} {
		s, err := bind(b.name, b.kind, *b.port)
		if err != nil {
			return fail(err)
		}
		socks = append(socks, s)
		*b.dst = s
		if conn.Transport == "tcp" {
			*b.port = s.port()
		}
	}
	k.conn = conn
	k.iopub.onSubscribe = k.welcome

	k.comms = newCommRegistry(k)
	if cu, ok := interp.(CommUser); ok {
		cu.SetComms(k.comms)
	}
	if d, ok := interp.(Debugger); ok {
		k.dbg = d
		d.SetDebugEvents(k.publishDebugEvent)
	}
	k.handlers = map[string]handler{
		"kernel_info_request": k.handleKernelInfo,
		"execute_request":     k.handleExecute,
		"complete_request":    k.handleComplete,
		"inspect_request":     k.handleInspect,
		"is_complete_request": k.handleIsComplete,
		"history_request":     k.handleHistory,
		"comm_info_request":   k.comms.handleInfo,
		"comm_open":           k.comms.handleOpen,
		"comm_msg":            k.comms.handleMsg,
		"comm_close":          k.comms.handleClose,
		"interrupt_request":   k.handleInterrupt,
		"shutdown_request":    k.handleShutdown,
		"debug_request":       k.handleDebug,
		"connect_request":     k.handleConnect,
	}
	log.WithFields(logrus.Fields{
		"transport": conn.Transport, "ip": conn.IP, "shell": conn.ShellPort,
		"control": conn.ControlPort, "stdin": conn.StdinPort, "iopub": conn.IOPubPort,
		"hb": conn.HBPort, "signed": sg.key != nil,
	}).Info("kernel sockets bound")
	return k, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// ConnectionInfo is the connection the kernel serves, with the ports it
// actually bound (useful when the given ones were 0).
func (k *Kernel) ConnectionInfo() ConnectionInfo { return k.conn }

// Interrupt cancels the running cell's context, as interrupt_request does.
// It is safe to call from a signal handler goroutine at any time.
func (k *Kernel) Interrupt() {
	k.cellMu.Lock()
	cancel := k.cellCancel
	k.cellMu.Unlock()
	if cancel != nil {
		k.log.Info("interrupting the running cell")
		cancel()
	}
}

// Run serves requests until a shutdown_request was answered (then it
// returns nil) or ctx ends (then it returns ctx.Err()). Either way it stops
// the running cell, drains IOPub, closes the sockets and the interpreter.
// Run may be called once.
func (k *Kernel) Run(ctx context.Context) error {
	if k.running.Swap(true) {
		return errors.New("kernel: Run called twice")
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	for _, l := range []struct {
		sock    *zsock
		channel string
	}{{k.shell, "shell"}, {k.control, "control"}, {k.stdin, "stdin"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.serve(runCtx, l.sock, l.channel)
		}()
	}
	go k.execLoop(runCtx)

	var err error
	select {
	case <-k.stop:
		k.log.Info("shutdown requested")
	case <-ctx.Done():
		err = ctx.Err()
		k.log.Info("kernel context ended; shutting down")
	}
	k.Interrupt()
	cancel()
	select {
	case <-k.execDone:
	case <-time.After(3 * time.Second):
		k.log.Warn("the running cell did not stop within 3s of shutdown; leaving it")
	}
	k.close()
	served := make(chan struct{})
	go func() { wg.Wait(); close(served) }()
	select {
	case <-served:
	case <-time.After(2 * time.Second):
		k.log.Warn("a request handler did not return within 2s of shutdown; leaving it")
	}
	return err
}

// close drains and closes sockets and the interpreter (once).
func (k *Kernel) close() {
	if k.closed.Swap(true) {
		return
	}
	if io := k.activeIO.Load(); io != nil {
		io.flush()
	}
	var wg sync.WaitGroup
	for _, s := range []*zsock{k.shell, k.control, k.stdin, k.hb} {
		wg.Add(1)
		go func() { defer wg.Done(); s.close(time.Second) }()
	}
	k.iopub.close(3 * time.Second)
	wg.Wait()
	func() {
		defer func() {
			if p := recover(); p != nil {
				k.log.Errorf("interpreter Close panicked: %v", p)
			}
		}()
		if err := k.interp.Close(); err != nil {
			k.log.WithError(err).Warn("closing the interpreter")
		}
	}()
	k.log.Info("kernel stopped")
}

// Close releases the sockets and the interpreter of a kernel whose Run was
// never called. After Run it does nothing.
func (k *Kernel) Close() error {
	k.close()
	return nil
}

func (k *Kernel) requestStop() { k.stopOnce.Do(func() { close(k.stop) }) }

// serve reads one router socket until ctx ends.
func (k *Kernel) serve(ctx context.Context, s *zsock, channel string) {
	for {
		frames, err := s.recv(ctx)
		if err != nil {
			return
		}
		k.handleFrames(ctx, s, channel, frames)
	}
}

func (k *Kernel) handleFrames(ctx context.Context, s *zsock, channel string, frames [][]byte) {
	m, err := decode(frames, k.sg)
	if err != nil {
		entry := k.log.WithField("channel", channel).WithError(err)
		if m == nil {
			if errors.Is(err, errBadSignature) {
				entry.Warn("message dropped: bad or missing signature")
			} else {
				entry.Warn("undecodable message dropped")
			}
			return
		}
		entry.WithField("msg_type", m.header.MsgType).Warn("malformed message")
		r := &request{sock: s, channel: channel, msg: m}
		if strings.HasSuffix(m.header.MsgType, "_request") {
			k.publishStatus("busy", m)
			k.replyError(r, "BadMessage", "malformed "+m.header.MsgType+": "+err.Error())
			k.publishStatus("idle", m)
		}
		return
	}
	r := &request{sock: s, channel: channel, msg: m}
	switch channel {
	case "stdin":
		if m.header.MsgType == "input_reply" {
			k.deliverInput(m)
		} else {
			k.log.Warnf("stdin: unexpected %s dropped", m.header.MsgType)
		}
		return
	}
	if m.header.MsgType == "execute_request" {
		// Cells run on the execution goroutine only, whichever channel
		// they came in on; the reply goes back on that channel.
		select {
		case k.execQ <- r:
		case <-ctx.Done():
		}
		return
	}
	k.dispatch(ctx, r)
}

// dispatch runs one request's handler between busy and idle, recovering
// from a panicking handler with an error reply.
func (k *Kernel) dispatch(ctx context.Context, r *request) {
	mt := r.msg.header.MsgType
	k.publishStatus("busy", r.msg)
	func() {
		defer func() {
			if p := recover(); p != nil {
				k.log.WithField("msg_type", mt).Errorf("handler panicked: %v\n%s", p, debug.Stack())
				if strings.HasSuffix(mt, "_request") {
					k.replyError(r, "KernelError", fmt.Sprintf("internal error handling %s: %v", mt, p))
				}
			}
		}()
		h, ok := k.handlers[mt]
		if !ok {
			k.log.WithField("channel", r.channel).Warnf("unknown message type %q", mt)
			if strings.HasSuffix(mt, "_request") {
				k.replyError(r, "UnknownMessageType", fmt.Sprintf("unknown message type %q", mt))
			}
			return
		}
		h(ctx, r)
	}()
	k.publishStatus("idle", r.msg)
	if r.shutdown {
		k.requestStop()
	}
}

// reply sends msgType+"_reply"-style replies to the requester.
func (k *Kernel) reply(r *request, msgType string, content any) {
	k.sendTo(r.sock, r.msg.identities, msgType, r.msg.rawHeader, content, nil)
}

func (k *Kernel) replyError(r *request, ename, evalue string) {
	mt := strings.TrimSuffix(r.msg.header.MsgType, "_request") + "_reply"
	k.reply(r, mt, map[string]any{
		"status": "error", "ename": ename, "evalue": evalue, "traceback": []string{ename + ": " + evalue},
	})
}

// sendTo sends on a router socket; false when no peer took the message.
func (k *Kernel) sendTo(s *zsock, identities [][]byte, msgType string, parent json.RawMessage, content any, metadata any) bool {
	if len(identities) == 0 {
		k.log.Warnf("%s: %s has no identity to go to; dropped", s.name, msgType)
		return false
	}
	frames := k.frames(identities, msgType, parent, content, metadata)
	return s.send(frames)
}

func (k *Kernel) frames(identities [][]byte, msgType string, parent json.RawMessage, content any, metadata any) [][]byte {
	if len(parent) == 0 {
		parent = json.RawMessage("{}")
	}
	hdr := marshal(newHeader(msgType, k.session))
	return encode(identities, hdr, parent, marshal(metadata), marshal(content), nil, k.sg)
}

// publish sends one IOPub message with parent as parent header.
func (k *Kernel) publish(msgType string, parent *message, content any, metadata any) {
	var raw json.RawMessage
	if parent != nil {
		raw = parent.rawHeader
	}
	topic := []byte("kernel." + k.session + "." + msgType)
	if msgType == "stream" {
		if m, ok := content.(map[string]any); ok {
			topic = []byte("stream." + fmt.Sprint(m["name"]))
		}
	}
	frames := k.frames([][]byte{topic}, msgType, raw, content, metadata)
	k.iopubMu.Lock()
	defer k.iopubMu.Unlock()
	k.iopub.publish(frames)
}

func (k *Kernel) publishStatus(state string, parent *message) {
	k.publish("status", parent, map[string]any{"execution_state": state}, nil)
}

// welcome builds the JEP 65 iopub_welcome for a new subscriber. It is sent
// to that subscriber only, before anything else it receives.
func (k *Kernel) welcome(topic []byte) [][]byte {
	k.log.WithField("subscription", string(topic)).Debug("iopub subscriber: sending iopub_welcome")
	var ids [][]byte
	if len(topic) > 0 {
		ids = [][]byte{topic}
	}
	return k.frames(ids, "iopub_welcome", nil, map[string]any{"subscription": string(topic)}, nil)
}

func decodeContent(r *request, v any) error {
	if err := json.Unmarshal(r.msg.content, v); err != nil {
		return fmt.Errorf("bad %s content: %w", r.msg.header.MsgType, err)
	}
	return nil
}

func (k *Kernel) handleKernelInfo(ctx context.Context, r *request) {
	lang, banner, links := k.interp.Info()
	if links == nil {
		links = []frontend.HelpLink{}
	}
	li := map[string]any{
		"name":           lang.Name,
		"version":        lang.Version,
		"mimetype":       lang.MIMEType,
		"file_extension": lang.FileExtension,
	}
	if lang.PygmentsLexer != "" {
		li["pygments_lexer"] = lang.PygmentsLexer
	}
	if lang.CodeMirrorMode != "" {
		li["codemirror_mode"] = lang.CodeMirrorMode
	}
	if lang.NBConvertExporter != "" {
		li["nbconvert_exporter"] = lang.NBConvertExporter
	}
	features := []string{}
	if k.dbg != nil {
		features = append(features, "debugger")
	}
	k.reply(r, "kernel_info_reply", map[string]any{
		"status":                 "ok",
		"protocol_version":       protocolVersion,
		"implementation":         "goaccel",
		"implementation_version": k.version,
		"language_info":          li,
		"banner":                 banner,
		"help_links":             links,
		"debugger":               k.dbg != nil,
		"supported_features":     features,
	})
}

func (k *Kernel) handleComplete(ctx context.Context, r *request) {
	var c struct {
		Code      string `json:"code"`
		CursorPos *int   `json:"cursor_pos"`
	}
	if err := decodeContent(r, &c); err != nil {
		k.replyError(r, "BadRequest", err.Error())
		return
	}
	cursor := len([]rune(c.Code))
	if c.CursorPos != nil {
		cursor = *c.CursorPos
	}
	comp, err := k.interp.Complete(ctx, c.Code, cursor)
	if err != nil {
		k.replyError(r, "CompletionError", err.Error())
		return
	}
	if comp.Matches == nil {
		comp.Matches = []string{}
	}
	if comp.Metadata == nil {
		comp.Metadata = map[string]any{}
	}
	k.reply(r, "complete_reply", map[string]any{
		"status": "ok", "matches": comp.Matches, "cursor_start": comp.CursorStart,
		"cursor_end": comp.CursorEnd, "metadata": comp.Metadata,
	})
}

func (k *Kernel) handleInspect(ctx context.Context, r *request) {
	var c struct {
		Code        string `json:"code"`
		CursorPos   *int   `json:"cursor_pos"`
		DetailLevel int    `json:"detail_level"`
	}
	if err := decodeContent(r, &c); err != nil {
		k.replyError(r, "BadRequest", err.Error())
		return
	}
	cursor := len([]rune(c.Code))
	if c.CursorPos != nil {
		cursor = *c.CursorPos
	}
	in, err := k.interp.Inspect(ctx, c.Code, cursor, c.DetailLevel)
	if err != nil {
		k.replyError(r, "InspectionError", err.Error())
		return
	}
	if in.Data == nil {
		in.Data = frontend.MIMEBundle{}
	}
	if in.Metadata == nil {
		in.Metadata = map[string]any{}
	}
	k.reply(r, "inspect_reply", map[string]any{
		"status": "ok", "found": in.Found, "data": in.Data, "metadata": in.Metadata,
	})
}

func (k *Kernel) handleIsComplete(ctx context.Context, r *request) {
	var c struct {
		Code string `json:"code"`
	}
	if err := decodeContent(r, &c); err != nil {
		k.replyError(r, "BadRequest", err.Error())
		return
	}
	st, indent := k.interp.IsComplete(ctx, c.Code)
	switch st {
	case frontend.Complete, frontend.Incomplete, frontend.Invalid, frontend.Unknown:
	default:
		st = frontend.Unknown
	}
	content := map[string]any{"status": string(st)}
	if st == frontend.Incomplete {
		content["indent"] = indent
	}
	k.reply(r, "is_complete_reply", content)
}

func (k *Kernel) handleHistory(ctx context.Context, r *request) {
	var c struct {
		Output         bool   `json:"output"`
		Raw            bool   `json:"raw"`
		HistAccessType string `json:"hist_access_type"`
		Session        int    `json:"session"`
		Start          int    `json:"start"`
		Stop           int    `json:"stop"`
		N              int    `json:"n"`
		Pattern        string `json:"pattern"`
		Unique         bool   `json:"unique"`
	}
	if err := decodeContent(r, &c); err != nil {
		k.replyError(r, "BadRequest", err.Error())
		return
	}
	var entries []histEntry
	switch c.HistAccessType {
	case "tail":
		entries = k.hist.tail(c.N, c.Unique)
	case "range":
		entries = k.hist.rangeOf(c.Session, c.Start, c.Stop)
	case "search":
		entries = k.hist.search(c.Pattern, c.N, c.Unique)
	default:
		k.replyError(r, "BadRequest", fmt.Sprintf("hist_access_type %q: want tail, range or search", c.HistAccessType))
		return
	}
	out := make([][]any, 0, len(entries))
	for _, e := range entries {
		if c.Output {
			var o any
			if e.Output != nil {
				o = *e.Output
			}
			out = append(out, []any{e.Session, e.Line, []any{e.Input, o}})
		} else {
			out = append(out, []any{e.Session, e.Line, e.Input})
		}
	}
	k.reply(r, "history_reply", map[string]any{"status": "ok", "history": out})
}

func (k *Kernel) handleInterrupt(ctx context.Context, r *request) {
	k.Interrupt()
	k.reply(r, "interrupt_reply", map[string]any{"status": "ok"})
}

func (k *Kernel) handleShutdown(ctx context.Context, r *request) {
	var c struct {
		Restart bool `json:"restart"`
	}
	if err := decodeContent(r, &c); err != nil {
		k.replyError(r, "BadRequest", err.Error())
		return
	}
	content := map[string]any{"status": "ok", "restart": c.Restart}
	k.reply(r, "shutdown_reply", content)
	// ipykernel also publishes the reply, so every frontend learns of it.
	k.publish("shutdown_reply", r.msg, content, nil)
	r.shutdown = true
}

func (k *Kernel) handleDebug(ctx context.Context, r *request) {
	if k.dbg == nil {
		k.replyError(r, "NotSupported", "debug_request is not supported by this interpreter (no debugger)")
		return
	}
	if !json.Valid(r.msg.content) {
		k.replyError(r, "BadRequest", "debug_request content is not JSON")
		return
	}
	k.dbgParent.Store(r.msg)
	resp, events := k.dbg.HandleDebug(ctx, json.RawMessage(r.msg.content))
	if !json.Valid(resp) {
		k.replyError(r, "KernelError", "the debugger's response is not JSON")
		return
	}
	k.reply(r, "debug_reply", resp)
	for _, ev := range events {
		k.publishDebugEvent(ev)
	}
}

// publishDebugEvent publishes a DAP event as debug_event.
func (k *Kernel) publishDebugEvent(event json.RawMessage) {
	if !json.Valid(event) {
		k.log.Warn("the debugger sent an event that is not JSON; dropped")
		return
	}
	k.publish("debug_event", k.dbgParent.Load(), event, nil)
}

func (k *Kernel) handleConnect(ctx context.Context, r *request) {
	k.reply(r, "connect_reply", map[string]any{
		"status": "ok", "shell_port": k.conn.ShellPort, "iopub_port": k.conn.IOPubPort,
		"stdin_port": k.conn.StdinPort, "hb_port": k.conn.HBPort, "control_port": k.conn.ControlPort,
	})
}
