package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/launcher/rendezvous"
)

// NodeOptions configure a node agent, `goaccel node`.
type NodeOptions struct {
	// RdzvBackend is "etcd" (default), "static" or "c10d", as the
	// notebook's Options.RdzvBackend.
	RdzvBackend string
	// RdzvEndpoint is where the nodes meet: etcd's client endpoints
	// (comma-separated; the embedded etcd of node 0 is at its
	// MasterAddr:UsePort), or the store's host:port. Required.
	RdzvEndpoint string
	// RdzvID is the run id, the notebook's RdzvID (default "none").
	RdzvID string
	// RdzvConf is as the notebook's Options.RdzvConf: secret_file (required
	// by static and c10d), lease_ttl, join_timeout, etcd's TLS and auth.
	RdzvConf map[string]string
	// NodeRank is the rank this node takes in every round; -1 takes the
	// lowest free one.
	NodeRank int
	// NProcPerNode is the number of worker processes; 0 means the
	// launch's NumProcesses.
	NProcPerNode int
	// Host is the address this node is named by; default: its address
	// towards the endpoint.
	Host string
}

// Bounds of one round at a node agent: connecting to node 0's launcher,
// and receiving the launch once connected.
const (
	agentDialTimeout  = 30 * time.Second
	agentStartTimeout = 60 * time.Second
)

// RunNode is a node agent: it waits for launches of the run in the
// rendezvous, and for each round it joins it takes the launch from node 0's
// launcher (the same payload local workers get), starts its workers, sends
// their output, displays and results back, and stops them when the launch
// ends, fails or is interrupted; then it waits for the next round. It
// returns when ctx ends (its workers are then stopped) or when its options
// are wrong. Its workers die with it even when it is killed with SIGKILL
// (each has Pdeathsig and its own process group).
func RunNode(ctx context.Context, o NodeOptions) error {
	if o.RdzvBackend == "" {
		o.RdzvBackend = "etcd"
	}
	o.RdzvBackend = strings.ToLower(o.RdzvBackend)
	if o.RdzvID == "" {
		o.RdzvID = DefaultRdzvID
	}
	switch {
	case o.RdzvEndpoint == "":
		return errors.New("launcher: a node agent needs the rendezvous endpoint (--rdzv-endpoint): etcd's host:port, or the store's")
	case o.NodeRank < -1:
		return fmt.Errorf("launcher: node rank %d: want 1 or more, or -1 for any", o.NodeRank)
	case o.NodeRank == 0:
		return errors.New("launcher: node rank 0 is the notebook's (the node whose launcher leads); give the agent 1 or more, or none")
	case o.NProcPerNode < 0:
		return fmt.Errorf("launcher: --nproc-per-node %d must not be negative", o.NProcPerNode)
	}
	psk, err := readSecretFile(o.RdzvConf["secret_file"])
	if err != nil {
		return err
	}
	rdzv, err := rendezvous.New(rendezvous.Config{
		Backend: o.RdzvBackend, Endpoint: o.RdzvEndpoint, RunID: o.RdzvID, Conf: o.RdzvConf, Secret: psk, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	defer rdzv.Close()
	a := &nodeAgent{o: o, psk: psk}
	hostname, _ := os.Hostname()
	a.self = rendezvous.Member{Rank: o.NodeRank, Host: o.Host, Hostname: hostname, NProc: o.NProcPerNode, Agent: true, PID: os.Getpid()}
	if a.self.Host == "" {
		if a.self.Host, err = rendezvous.OutboundHost(o.RdzvEndpoint); err != nil {
			a.self.Host = hostname
		}
	}
	log.Infof("goaccel node: waiting for launches of run %q (%s rendezvous at %s) as %s", o.RdzvID, o.RdzvBackend, o.RdzvEndpoint, describeSelf(a.self))
	var after int64
	lastWait := ""
	for {
		round, err := rdzv.Join(ctx, a.self, after)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var re *rendezvous.RoundError
			switch {
			case errors.As(err, &re):
				after = max(after, re.Round)
				log.WithError(err).Warn("goaccel node: could not take part in the launch; waiting for the next one")
			case err.Error() != lastWait: // the rendezvous is not reachable (yet)
				lastWait = err.Error()
				log.WithError(err).Info("goaccel node: waiting for the rendezvous")
			default:
				log.WithError(err).Debug("goaccel node: waiting for the rendezvous")
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		}
		after, lastWait = round.ID, ""
		log.Infof("goaccel node: node %d of round %d (%d nodes, world size %d, %s)", round.Self, round.ID,
			len(round.Members), round.WorldSize(), nodeWhere("", round.Ranks(round.Self)))
		if err := a.serve(ctx, round); err != nil {
			log.WithError(err).Warn("goaccel node: the launch ended with an error")
		} else {
			log.Infof("goaccel node: round %d done", round.ID)
		}
		if err := round.Close(); err != nil {
			log.WithError(err).Debug("goaccel node: leaving the round")
		}
	}
}

func describeSelf(m rendezvous.Member) string {
	rank := "any free node rank"
	if m.Rank >= 0 {
		rank = fmt.Sprintf("node %d", m.Rank)
	}
	procs := "the launch's processes per node"
	if m.NProc > 0 {
		procs = fmt.Sprintf("%d processes", m.NProc)
	}
	return fmt.Sprintf("%s (%s, %s)", rank, m.Host, procs)
}

// nodeAgent is the state RunNode keeps across rounds.
type nodeAgent struct {
	o    NodeOptions
	psk  string
	self rendezvous.Member
}

// serve takes part in one round: connects to node 0's launcher, receives
// the launch, runs the workers.
func (a *nodeAgent) serve(ctx context.Context, round *rendezvous.Round) error {
	v := round.Spec.Values
	secret, err := roundSecret(v, a.psk, a.o.RdzvID)
	if err != nil {
		_ = round.Fail(ctx, err.Error())
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, agentDialTimeout)
	conn, err := pg.DialAuth(dctx, v["coordinator"], secret, ctlLabel, "the launcher of node 0")
	cancel()
	if err != nil {
		_ = round.Fail(ctx, err.Error())
		return err
	}
	cc := newCtlConn(conn)
	defer cc.close()
	if err := cc.send(ctlMsg{T: ctlHello, Round: round.ID, Node: round.Self}); err != nil {
		return err
	}
	m, err := cc.recv(agentStartTimeout)
	switch {
	case err != nil:
		return fmt.Errorf("launcher: waiting for the launch from node 0: %w", err)
	case m.T == ctlError:
		return fmt.Errorf("launcher: node 0 turned this node away: %s", m.Err)
	case m.T != ctlStart || m.Start == nil:
		return fmt.Errorf("launcher: node 0 sent %q instead of the launch", m.T)
	}
	st := m.Start
	l, err := a.launchFor(st, secret, cc)
	if err == nil {
		var g *localGroup
		if g, err = l.startGroup(st.Mode, st.Restart, st.Payload); err == nil {
			return a.supervise(ctx, l, g, cc, round, st.Mode)
		}
	}
	_ = cc.send(ctlMsg{T: ctlError, Err: fmt.Sprintf("node %d (%s) could not start its workers: %v", round.Self, a.self.Host, err)})
	return err
}

// launchFor is the local side of the launch node 0 sent.
func (a *nodeAgent) launchFor(st *startMsg, secret string, cc *ctlConn) (*launch, error) {
	o := Options{
		NumProcesses: st.NProc, MixedPrecision: st.MixedPrecision, NodeRank: st.NodeRank, NumNodes: st.NumNodes,
		RdzvBackend: st.RdzvBackend, RdzvEndpoint: st.Store, RdzvConf: st.RdzvConf, RdzvID: st.RdzvID,
		MaxRestarts: st.MaxRestarts, MonitorInterval: st.MonitorInterval, LogLinePrefixTemplate: st.Prefix,
		UseCPU: st.UseCPU, Env: st.Env,
	}
	if o.MonitorInterval <= 0 {
		o.MonitorInterval = DefaultMonitorInterval
	}
	var devs []GPU
	if !o.UseCPU {
		var err error
		if devs, err = currentProbes().GPUs(); err != nil {
			return nil, fmt.Errorf("listing the GPUs: %w", err)
		}
		if len(devs) > 0 && o.NumProcesses > len(devs) {
			return nil, fmt.Errorf("it runs %d processes but only %d GPU(s) are visible there", o.NumProcesses, len(devs))
		}
	}
	cmd, err := currentWorkerCommand()
	if err != nil {
		return nil, err
	}
	l := &launch{
		opts: o, pub: ctlPublisher{cc}, cmd: cmd, secret: secret, endpoint: st.Store,
		rankBase: st.RankBase, world: st.World, nodeRank: st.NodeRank, numNodes: st.NumNodes, launchID: st.LaunchID,
	}
	if len(devs) > 0 {
		l.devices = devs[:o.NumProcesses]
	}
	return l, nil
}

// supervise reports every worker's exit to node 0 and stops the workers
// when node 0 says so, when its connection or the round is lost, or when
// ctx ends. It returns once every worker is reaped.
func (a *nodeAgent) supervise(ctx context.Context, l *launch, g *localGroup, cc *ctlConn, round *rendezvous.Round, mode string) error {
	defer g.close()
	stops := make(chan bool, 1) // interrupt?
	lost := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() { // owner: supervise; ends when serve closes the connection
		for {
			m, err := cc.recv(0)
			if err != nil {
				lost <- err
				return
			}
			if m.T == ctlStop {
				select {
				case stops <- m.Interrupt:
				case <-quit:
					return
				}
			}
		}
	}()
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	rev := round.Events(ectx)
	var (
		stopping bool
		why      error
	)
	stop := func(steps []stopStep, reason error) {
		if !stopping {
			stopping, why = true, reason
			g.stop(steps...)
		}
	}
	ctxDone := ctx.Done()
	for remaining := len(g.ws); remaining > 0; {
		select {
		case w := <-g.exited:
			remaining--
			msg := ctlMsg{T: ctlExit, Rank: w.rank, Stopped: stopping}
			if f := w.failure(mode); f != nil {
				f.NodeRank, f.Host = l.nodeRank, a.self.Host
				msg.Failure = f
				stop(l.failureSteps(), f)
			} else {
				w.mu.Lock()
				msg.Result = w.result
				w.mu.Unlock()
			}
			_ = cc.send(msg)
		case interrupt := <-stops:
			if interrupt {
				stop(interruptSteps, errors.New("the cell was interrupted"))
			} else {
				stop(l.failureSteps(), errors.New("the launch failed on another node"))
			}
		case err := <-lost:
			lost = nil
			log.WithError(err).Warn("goaccel node: lost the connection to node 0; stopping the workers")
			stop(l.failureSteps(), fmt.Errorf("the connection to node 0 was lost: %w", err))
		case ev, ok := <-rev:
			if !ok {
				rev = nil
				continue
			}
			log.Warnf("goaccel node: %s; stopping the workers", ev)
			stop(l.failureSteps(), errors.New(ev.String()))
		case <-ctxDone:
			ctxDone = nil
			_ = cc.send(ctlMsg{T: ctlError, Err: fmt.Sprintf("the node agent of node %d (%s) is shutting down (it was signalled); its workers are stopped", l.nodeRank, a.self.Host)})
			stop(interruptSteps, errors.New("the node agent is shutting down"))
		}
	}
	// Leave the round before reporting done: node 0 may stop an embedded
	// etcd once every agent is done, and etcd would wait for our streams.
	mctx, mcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer mcancel()
	var err error
	if why != nil {
		_ = round.Fail(mctx, why.Error())
		err = why
	} else {
		err = round.Finish(mctx)
	}
	if cerr := round.Close(); cerr != nil {
		log.WithError(cerr).Debug("goaccel node: leaving the round")
	}
	_ = cc.send(ctlMsg{T: ctlDone})
	return err
}
