package launcher

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/launcher/rendezvous"
)

// agentLink is node 0's control connection to one node agent.
type agentLink struct {
	c     *ctlConn
	round int64 // from the agent's hello
	node  int
	m     rendezvous.Member
	done  bool // the agent reported its workers gone, or was given up on
}

// linkEvent is a message (or the loss) of an agent's connection.
type linkEvent struct {
	a   *agentLink
	m   ctlMsg
	err error
}

// Bounds on how long a node agent may take to report its workers gone
// after being told to stop; then its connection is closed (which makes it
// kill them).
const (
	agentStopGrace      = 5 * time.Second
	agentInterruptGrace = interruptKill + 4*time.Second
)

// remotes is what an attempt across nodes watches besides its local
// workers: the node agents' connections (node 0) and the round's events.
// A nil *remotes (one node) has nothing to watch.
type remotes struct {
	l        *launch
	round    *rendezvous.Round
	links    []*agentLink
	pendingN int

	events  chan linkEvent
	rev     <-chan rendezvous.Event
	giveUpT *time.Timer
	quit    chan struct{}
	cancel  context.CancelFunc
	wg      sync.WaitGroup // readers and failure reports
}

func newRemotes(l *launch, round *rendezvous.Round, links []*agentLink) *remotes {
	ctx, cancel := context.WithCancel(context.Background())
	rm := &remotes{
		l: l, round: round, links: links, pendingN: len(links),
		events: make(chan linkEvent, 16), quit: make(chan struct{}), cancel: cancel,
	}
	rm.rev = round.Events(ctx)
	for _, a := range links {
		rm.wg.Add(1)
		go rm.read(a) // owner: rm; ends when the connection closes (close closes it)
	}
	return rm
}

// read republishes an agent's output and hands its other messages over.
func (rm *remotes) read(a *agentLink) {
	defer rm.wg.Done()
	for {
		m, err := a.c.recv(0)
		if err == nil && republish(rm.l.pub, m) {
			continue
		}
		select {
		case rm.events <- linkEvent{a, m, err}:
		case <-rm.quit:
			return
		}
		if err != nil || m.T == ctlDone || m.T == ctlError {
			return
		}
	}
}

func (rm *remotes) pending() int {
	if rm == nil {
		return 0
	}
	return rm.pendingN
}

func (rm *remotes) linkEvents() <-chan linkEvent {
	if rm == nil {
		return nil
	}
	return rm.events
}

func (rm *remotes) roundEvents() <-chan rendezvous.Event {
	if rm == nil {
		return nil
	}
	return rm.rev
}

func (rm *remotes) noMoreRoundEvents() { rm.rev = nil }

func (rm *remotes) giveUp() <-chan time.Time {
	if rm == nil || rm.giveUpT == nil {
		return nil
	}
	return rm.giveUpT.C
}

// handle takes an agent's message: a rank's result, or a failure.
func (rm *remotes) handle(ev linkEvent, stopping bool) (*rankResult, groupFailure) {
	a := ev.a
	if a.done {
		return nil, nil
	}
	switch {
	case ev.err != nil:
		a.done = true
		rm.pendingN--
		return nil, lostNode(rm.round, a.m, "its agent's connection to the launcher closed: "+connLoss(ev.err))
	case ev.m.T == ctlExit && ev.m.Failure != nil:
		if stopping && ev.m.Stopped {
			return nil, nil // stopped because of another failure
		}
		return nil, ev.m.Failure
	case ev.m.T == ctlExit:
		return &rankResult{ev.m.Rank, ev.m.Result}, nil
	case ev.m.T == ctlDone:
		a.done = true
		rm.pendingN--
	case ev.m.T == ctlError:
		a.done = true
		rm.pendingN--
		f := lostNode(rm.round, a.m, ev.m.Err)
		f.Lost = false
		return nil, f
	}
	return nil, nil
}

// connLoss describes how a control connection ended.
func connLoss(err error) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "the agent died or was killed"
	case errors.Is(err, syscall.ETIMEDOUT):
		return "its host stopped answering (TCP keep-alive)"
	}
	return err.Error()
}

// roundFailure turns a round event into the failure it means.
func (rm *remotes) roundFailure(ev rendezvous.Event) groupFailure {
	switch ev.Kind {
	case rendezvous.NodeLost:
		m := ev.Node
		if m.Rank < 0 { // the store itself went away: the node hosting it
			m = rm.round.Members[rm.round.Spec.Leader]
		}
		// A lost node's agent cannot report its workers stopped: do not
		// wait for it (closing the link makes it kill them if it lives).
		for _, a := range rm.links {
			if a.m.Rank == m.Rank && !a.done {
				a.done = true
				rm.pendingN--
				a.c.close()
			}
		}
		return lostNode(rm.round, m, ev.Reason)
	case rendezvous.NodeFailed:
		f := lostNode(rm.round, ev.Node, ev.Reason)
		f.Lost = false
		return f
	}
	f := lostNode(rm.round, rm.round.Members[rm.round.Spec.Leader], "it restarted the group ("+ev.Reason+")")
	f.Lost = false
	return f
}

// stop tells every agent still running to stop its workers, and arms the
// bound on how long they may take.
func (rm *remotes) stop(interrupt bool) {
	if rm == nil || rm.pendingN == 0 {
		return
	}
	for _, a := range rm.links {
		if !a.done {
			_ = a.c.send(ctlMsg{T: ctlStop, Interrupt: interrupt})
		}
	}
	d := agentStopGrace + rm.l.opts.MonitorInterval
	if interrupt {
		d = agentInterruptGrace
	}
	rm.giveUpT = time.NewTimer(d)
}

// abandon gives up on the agents that did not report their workers gone:
// their connections are closed, which makes them kill their workers.
func (rm *remotes) abandon() {
	for _, a := range rm.links {
		if !a.done {
			a.done = true
			rm.pendingN--
			log.WithField("node", a.m.Rank).Warn("launcher: a node agent did not report its workers stopped; closing its connection")
			a.c.close()
		}
	}
}

// reportFailure tells the round's other members (notebooks on other nodes)
// that the attempt failed here.
func (rm *remotes) reportFailure(f groupFailure) {
	if rm == nil {
		return
	}
	rm.wg.Add(1)
	go func() { // owner: rm, through wg
		defer rm.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rm.round.Fail(ctx, f.Error()); err != nil {
			log.WithError(err).Debug("launcher: reporting the failure to the other nodes")
		}
	}()
}

// close stops watching and closes the agents' connections.
func (rm *remotes) close() {
	rm.cancel()
	close(rm.quit)
	if rm.giveUpT != nil {
		rm.giveUpT.Stop()
	}
	for _, a := range rm.links {
		a.c.close()
	}
	rm.wg.Wait()
}
