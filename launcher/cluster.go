package launcher

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/launcher/rendezvous"
)

// agentConnectTimeout bounds how long node 0 waits, once a round formed,
// for each node agent of the round to connect.
const agentConnectTimeout = 30 * time.Second

// finishTimeout bounds telling the other nodes that this one finished or
// failed: the leader may already have stopped its embedded etcd, and the
// etcd client retries a request to a server that is gone for as long as
// its context lets it.
const finishTimeout = 2 * time.Second

// failRound tells the other nodes of round why this one failed, within
// finishTimeout.
func failRound(ctx context.Context, round *rendezvous.Round, reason string) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := round.Fail(fctx, reason); err != nil {
		log.WithError(err).Debug("launcher: telling the other nodes this one failed")
	}
}

// cluster is the multi-node side of a launch on this node: the rendezvous
// backend, the embedded etcd it may run, and on node 0 (the leader) the
// coordinator that node agents connect to.
type cluster struct {
	l      *launch
	rdzv   rendezvous.Backend
	emb    *rendezvous.Embedded
	leader bool
	psk    string // the pre-shared secret (RdzvConf secret_file), or ""
	nonce  string // etcd with a psk: what the launch secret is derived from
	self   rendezvous.Member
	after  int64 // a follower's last round

	ctl    net.Listener // the leader's coordinator
	hellos chan *agentLink
	quit   chan struct{}
	wg     sync.WaitGroup // the accept loop and its greeters
}

func newCluster(l *launch) (_ *cluster, err error) {
	o := l.opts
	c := &cluster{l: l, leader: o.NodeRank == 0, quit: make(chan struct{})}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if c.psk, err = readSecretFile(o.RdzvConf["secret_file"]); err != nil {
		return nil, err
	}
	if c.psk == "" && o.RdzvBackend != "etcd" {
		return nil, fmt.Errorf("launcher: NumNodes %d with RdzvBackend %q needs RdzvConf[\"secret_file\"]: a file holding a secret every node shares (the same file on each node, e.g. made with `head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE`): the rendezvous store admits only processes that know it", o.NumNodes, o.RdzvBackend)
	}
	endpoint := o.RdzvEndpoint
	if o.RdzvBackend == "etcd" && endpoint == "" {
		if c.leader {
			c.emb, err = rendezvous.StartEmbedded(context.Background(), o.MasterAddr, o.UsePort, log)
			if err != nil {
				return nil, fmt.Errorf("launcher: %w", err)
			}
			endpoint = c.emb.Endpoint()
		} else {
			endpoint = net.JoinHostPort(o.MasterAddr, o.UsePort)
		}
	}
	c.rdzv, err = rendezvous.New(rendezvous.Config{
		Backend: o.RdzvBackend, Endpoint: endpoint, RunID: o.RdzvID, Conf: o.RdzvConf,
		Secret: c.psk, HostStore: c.leader && o.RdzvBackend == "static", Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("launcher: %w", err)
	}
	hostname, _ := os.Hostname()
	c.self = rendezvous.Member{Rank: o.NodeRank, Host: o.MasterAddr, Hostname: hostname, NProc: o.NumProcesses, PID: os.Getpid()}
	if !c.leader {
		if h, err := rendezvous.OutboundHost(endpoint); err == nil {
			c.self.Host = h
		}
		return c, nil
	}
	return c, c.setUpLeader()
}

// setUpLeader makes the launch secret, hosts the process group's store
// (etcd: the nodes meet in etcd, the workers in this store) and starts the
// coordinator.
func (c *cluster) setUpLeader() error {
	l, o := c.l, c.l.opts
	var err error
	if l.launchID, err = randomHex(8); err != nil {
		return err
	}
	switch {
	case o.RdzvBackend != "etcd":
		l.secret, l.endpoint = c.psk, o.RdzvEndpoint
	case c.psk != "":
		if c.nonce, err = randomHex(16); err != nil {
			return err
		}
		l.secret = deriveSecret(c.psk, o.RdzvID, c.nonce)
	default:
		if l.secret, err = newSecret(); err != nil {
			return err
		}
	}
	if o.RdzvBackend == "etcd" {
		st, err := hostStore(net.JoinHostPort(o.MasterAddr, "0"), l.secret)
		if err != nil {
			return fmt.Errorf("launcher: hosting the process group's store on %s: %w", o.MasterAddr, err)
		}
		l.store, l.endpoint = st, st.Addr()
	}
	ln, err := pg.Listen(net.JoinHostPort(o.MasterAddr, "0"))
	if err != nil {
		return fmt.Errorf("launcher: listening for node agents on %s: %w", o.MasterAddr, err)
	}
	c.ctl, c.hellos = ln, make(chan *agentLink, 16)
	c.wg.Add(1)
	go c.acceptAgents() // owner: the cluster; ends when close closes the listener
	return nil
}

func (c *cluster) close() {
	close(c.quit)
	if c.ctl != nil {
		c.ctl.Close()
	}
	c.wg.Wait()
	for drained := c.hellos == nil; !drained; {
		select {
		case a := <-c.hellos:
			a.c.close()
		default:
			drained = true
		}
	}
	if c.rdzv != nil {
		if err := c.rdzv.Close(); err != nil {
			log.WithError(err).Debug("launcher: closing the rendezvous")
		}
	}
	if c.emb != nil {
		if err := c.emb.Close(); err != nil {
			log.WithError(err).Warn("launcher: stopping the embedded etcd")
		}
	}
}

// acceptAgents authenticates node agents and hands over their hellos.
func (c *cluster) acceptAgents() {
	defer c.wg.Done()
	for {
		conn, err := c.ctl.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go func() { // owner: the cluster, through wg
			defer c.wg.Done()
			if err := pg.AcceptAuth(conn, c.l.secret, ctlLabel); err != nil {
				if errors.Is(err, pg.ErrAuth) {
					log.WithError(err).Warn("launcher: refused a node agent")
				}
				conn.Close()
				return
			}
			cc := newCtlConn(conn)
			m, err := cc.recv(10 * time.Second)
			if err != nil || m.T != ctlHello {
				cc.close()
				return
			}
			select {
			case c.hellos <- &agentLink{c: cc, round: m.Round, node: m.Node}:
			case <-c.quit:
				cc.close()
			}
		}()
	}
}

// attempt runs one attempt across the nodes: a round of the rendezvous,
// then this node's workers (and, on node 0, the node agents' workers).
func (c *cluster) attempt(ctx context.Context, mode string, restart int, payload []byte) ([]rankResult, groupFailure, error) {
	l, o := c.l, c.l.opts
	var round *rendezvous.Round
	var err error
	if c.leader {
		values := map[string]string{
			"store": l.endpoint, "coordinator": c.ctl.Addr().String(), "launch": l.launchID,
			"mode": mode, "restart": strconv.Itoa(restart), "backend": o.RdzvBackend,
		}
		if o.RdzvBackend == "etcd" {
			if c.nonce != "" {
				values["nonce"] = c.nonce
			} else {
				values["secret"] = l.secret
			}
		}
		round, err = c.rdzv.Lead(ctx, rendezvous.Spec{NumNodes: o.NumNodes, NProc: o.NumProcesses, Values: values}, c.self)
	} else {
		round, err = c.rdzv.Join(ctx, c.self, c.after)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("launcher: interrupted while the nodes met: %w", ctx.Err())
		}
		return nil, nil, fmt.Errorf("launcher: %w", err)
	}
	defer round.Close()
	c.after = round.ID
	if !c.leader {
		if err := c.adopt(round, mode, &restart); err != nil {
			failRound(ctx, round, err.Error())
			return nil, nil, err
		}
	}
	l.world, l.rankBase = round.WorldSize(), round.RankBase(round.Self)
	log.WithField("round", round.ID).Debugf("launcher: node %d of %d, world size %d, first rank %d", round.Self, o.NumNodes, l.world, l.rankBase)

	var links []*agentLink
	if c.leader {
		var f groupFailure
		if links, f, err = c.connectAgents(ctx, round); err != nil || f != nil {
			failRound(ctx, round, "the launch could not start on every node")
			return nil, f, err
		}
		for _, a := range links {
			if err := a.c.send(ctlMsg{T: ctlStart, Start: c.startFor(round, a.m, mode, restart, payload)}); err != nil {
				f := lostNode(round, a.m, fmt.Sprintf("sending it the launch failed: %v", err))
				closeLinks(links)
				return nil, f, nil
			}
		}
	}
	g, err := l.startGroup(mode, restart, payload)
	if err != nil {
		failRound(ctx, round, err.Error())
		for _, a := range links {
			_ = a.c.send(ctlMsg{T: ctlStop})
		}
		closeLinks(links)
		return nil, nil, err
	}
	rm := newRemotes(l, round, links)
	res, f, err := l.supervise(ctx, mode, g, rm)
	rm.close()
	if f == nil && err == nil {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		if ferr := round.Finish(fctx); ferr != nil {
			log.WithError(ferr).Debug("launcher: telling the other nodes this one finished")
		}
		cancel()
	}
	return res, f, err
}

// adopt takes what a follower needs from the leader's round: the launch
// secret, the store, the launch id, the restart count.
func (c *cluster) adopt(round *rendezvous.Round, mode string, restart *int) error {
	l, v := c.l, round.Spec.Values
	if v["mode"] != mode {
		return fmt.Errorf("launcher: node %d runs the %s launch but this node the %s one: set ACCELERATE_DEBUG_MODE alike on every node", round.Spec.Leader, v["mode"], mode)
	}
	secret, err := roundSecret(v, c.psk, l.opts.RdzvID)
	if err != nil {
		return err
	}
	l.secret, l.endpoint, l.launchID = secret, v["store"], v["launch"]
	if n, err := strconv.Atoi(v["restart"]); err == nil {
		*restart = n
	}
	return nil
}

// connectAgents waits for the agent of every agent member of round.
func (c *cluster) connectAgents(ctx context.Context, round *rendezvous.Round) ([]*agentLink, groupFailure, error) {
	want := map[int]rendezvous.Member{}
	for _, m := range round.Members {
		if m.Agent {
			want[m.Rank] = m
		}
	}
	got := map[int]*agentLink{}
	var links []*agentLink
	timer := time.NewTimer(agentConnectTimeout)
	defer timer.Stop()
	for len(got) < len(want) {
		select {
		case a := <-c.hellos:
			m, ok := want[a.node]
			if a.round != round.ID || !ok || got[a.node] != nil {
				_ = a.c.send(ctlMsg{T: ctlError, Err: fmt.Sprintf("node %d is not an agent of round %d (the launch moved on)", a.node, round.ID)})
				a.c.close()
				continue
			}
			a.m = m
			got[a.node] = a
			links = append(links, a)
		case <-timer.C:
			closeLinks(links)
			for r := range round.Members {
				if m, ok := want[r]; ok && got[r] == nil {
					return nil, lostNode(round, m, fmt.Sprintf("it joined round %d but its agent did not connect to the launcher at %s within %s", round.ID, c.ctl.Addr(), agentConnectTimeout)), nil
				}
			}
		case <-ctx.Done():
			closeLinks(links)
			return nil, nil, fmt.Errorf("launcher: interrupted while the node agents connected: %w", ctx.Err())
		}
	}
	return links, nil, nil
}

// startFor is the start message of agent member m.
func (c *cluster) startFor(round *rendezvous.Round, m rendezvous.Member, mode string, restart int, payload []byte) *startMsg {
	l, o := c.l, c.l.opts
	conf := map[string]string{}
	for k, v := range o.RdzvConf {
		if k != "password" {
			conf[k] = v
		}
	}
	return &startMsg{
		Mode: mode, Restart: restart, Payload: payload,
		World: round.WorldSize(), RankBase: round.RankBase(m.Rank), NodeRank: m.Rank, NumNodes: o.NumNodes, NProc: m.NProc,
		Store: l.endpoint, LaunchID: l.launchID,
		RdzvBackend: o.RdzvBackend, RdzvID: o.RdzvID, RdzvConf: conf, MixedPrecision: o.MixedPrecision,
		MaxRestarts: o.MaxRestarts, MonitorInterval: o.MonitorInterval, Prefix: o.LogLinePrefixTemplate,
		UseCPU: o.UseCPU, Env: o.Env,
	}
}

// lostNode is the failure of member m of round, gone for reason.
func lostNode(round *rendezvous.Round, m rendezvous.Member, reason string) *NodeFailedError {
	var ranks []int
	if m.Rank >= 0 && m.Rank < len(round.Members) {
		ranks = round.Ranks(m.Rank)
	}
	return &NodeFailedError{NodeRank: m.Rank, Host: m.Host, Ranks: ranks, Lost: true, Reason: reason}
}

func closeLinks(links []*agentLink) {
	for _, a := range links {
		a.c.close()
	}
}

// readSecretFile reads the pre-shared secret of RdzvConf secret_file ("" when
// path is empty). The file must be private to its owner.
func readSecretFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("launcher: RdzvConf secret_file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("launcher: RdzvConf secret_file %s can be read by other users (mode %04o): make it private with chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("launcher: RdzvConf secret_file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if len(s) < 16 {
		return "", fmt.Errorf("launcher: RdzvConf secret_file %s holds %d characters; use at least 16 (e.g. `head -c 32 /dev/urandom | base64`)", path, len(s))
	}
	return secretText(b, s), nil
}

// secretText is the form of a pre-shared secret that travels: the trimmed
// text, or the hex of the file's bytes when they are not text (raw bytes from
// /dev/urandom). The secret reaches workers in an environment variable, which
// cannot hold a NUL, and etcd and JSON, which replace invalid UTF-8. Every node
// reads the same file and so keys the same; hex is text, so the form is stable
// when a node passes it on (the Slurm agents' standard input).
func secretText(raw []byte, trimmed string) string {
	if utf8.ValidString(trimmed) && !strings.ContainsFunc(trimmed, unicode.IsControl) {
		return trimmed
	}
	return hex.EncodeToString(raw)
}

// deriveSecret is the launch secret made from a pre-shared secret and the
// nonce node 0 published: etcd holds the nonce, never the secret.
func deriveSecret(psk, runID, nonce string) string {
	m := hmac.New(sha256.New, []byte(psk))
	m.Write([]byte("goaccel launch secret\x00" + runID + "\x00" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// roundSecret is the launch secret a joining node learns from the round's
// values and its own pre-shared secret.
func roundSecret(values map[string]string, psk, runID string) (string, error) {
	switch {
	case values["secret"] != "":
		return values["secret"], nil
	case values["nonce"] != "":
		if psk == "" {
			return "", errors.New("launcher: node 0 derives the launch secret from a secret_file: give this node the same file (RdzvConf secret_file, or --rdzv-conf secret_file=FILE for goaccel node)")
		}
		return deriveSecret(psk, runID, values["nonce"]), nil
	case psk != "":
		return psk, nil
	}
	return "", errors.New("launcher: the round carries no launch secret and this node has no secret_file")
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("launcher: reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}
