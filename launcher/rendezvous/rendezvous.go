// Package rendezvous is how the nodes of a multi-node launch find each
// other: which processes take part in a round of the launch, which node rank
// each one has, how many worker processes each runs (so the world size and
// every node's global ranks follow), and what they must all know to reach
// each other (the process group's store address, the launch's coordinator,
// the launch secret or the nonce it is derived from). It plays the part of
// torchelastic's rendezvous handlers; package launcher is its only user.
//
// # Rounds
//
// One node leads: the launcher of node 0 (the notebook's kernel) opens a
// round with [Backend.Lead], saying how many nodes it needs and the values
// every node gets ([Spec]); the others — node agents (`goaccel node`) or
// the same notebook run on another machine — join the newest round opened
// after the last one they took part in with [Backend.Join], asking for a
// node rank or taking the lowest free one. Both return once every node of
// the round has joined (the barrier), or an error naming the node ranks
// still missing when join_timeout passes. A restart of the launch is a new
// round; members that are still up join it again.
//
// While the round runs, [Round.Events] reports what ends it for this node:
// a member that reported a failure ([Round.Fail]), a member that died or
// left without finishing ([NodeLost]: with etcd, a member whose lease
// expired), a newer round opened by the leader ([Superseded]). A member
// that ended cleanly says so with [Round.Finish], so that its leaving is not
// taken for a death.
//
// # Backends
//
//   - "etcd": the round lives in an etcd cluster (go.etcd.io/etcd/client/v3)
//     under <etcd_prefix>/<run id>/. Every member's key is bound to a lease
//     that its process keeps alive (lease_ttl seconds, default 10): a node
//     that dies or is cut off loses its key within lease_ttl and every
//     other member is told which node it was. [StartEmbedded] runs an etcd
//     member in-process for launches that name no endpoint.
//   - "static" and "c10d": the round lives in the launch's authenticated
//     TCP store (package accelerate/pg). With "static" the leader hosts it
//     at the endpoint; with "c10d" whichever member can bind the endpoint
//     first hosts it for as long as it runs. The store has no leases: a
//     node that dies is noticed by its connections (the launcher's link to
//     a node agent, the process group's links), not by the rendezvous.
//
// # Security
//
// Whoever can read a run's keys can join its rounds and, unless a
// pre-shared secret is used, learn the launch secret that admits a process
// to the launch's process group. The store backends therefore require a
// secret shared by every node (Config.Secret; the launcher reads it from
// RdzvConf "secret_file") and every store connection proves it. With etcd,
// protect the cluster: client TLS with certificates ("cacert", "cert",
// "key"), etcd users ("user" with "password" or "password_file") whose role
// is limited to the run's prefix, and a network only the nodes reach — or
// give every node the same "secret_file", so that etcd holds only a nonce.
package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Defaults of the rendezvous configuration keys (RdzvConf).
const (
	// DefaultJoinTimeout bounds the wait for every node of a round
	// (torchelastic's join_timeout default).
	DefaultJoinTimeout = 600 * time.Second
	// DefaultLeaseTTL is how long an etcd member's key outlives its last
	// keep-alive: how soon a dead node is noticed.
	DefaultLeaseTTL = 10 * time.Second
	// DefaultEtcdPrefix is where runs live in etcd.
	DefaultEtcdPrefix = "/goaccel/rdzv"
)

// Member is one node of a round.
type Member struct {
	// Rank is the node rank. In a Join request, -1 takes the lowest free
	// rank of the round.
	Rank int `json:"rank"`
	// Host is the address the other nodes reach this node at; it names the
	// node in errors.
	Host string `json:"host"`
	// Hostname is the node's host name, for messages.
	Hostname string `json:"hostname,omitempty"`
	// NProc is how many worker processes the node runs. 0 in a Join
	// request: the leader's Spec.NProc.
	NProc int `json:"nproc"`
	// Agent is true for a node agent, which takes the launch (function,
	// options) from the leader; false for a notebook that runs the launch
	// itself.
	Agent bool `json:"agent"`
	// PID is the member's process id on its host.
	PID int `json:"pid"`
	// LeaseTTL is the member's lease_ttl in seconds (etcd).
	LeaseTTL int `json:"lease_ttl,omitempty"`
}

// String names the member for messages: "node 1 (10.0.0.2)".
func (m Member) String() string {
	h := m.Host
	if h == "" {
		h = m.Hostname
	}
	if h == "" {
		return "node " + strconv.Itoa(m.Rank)
	}
	return fmt.Sprintf("node %d (%s)", m.Rank, h)
}

// Spec is what the leader publishes for a round.
type Spec struct {
	// NumNodes is how many nodes the round needs (at least 2).
	NumNodes int `json:"num_nodes"`
	// NProc is the number of processes of a member that asks for none.
	NProc int `json:"nproc"`
	// Leader is the leader's node rank (Lead sets it).
	Leader int `json:"leader"`
	// Values are what every member must know (addresses, the secret or its
	// nonce, the launch id).
	Values map[string]string `json:"values,omitempty"`
}

// EventKind says what ended a round for a member.
type EventKind int

const (
	// NodeLost: a member died, was cut off (its lease expired) or left
	// without finishing.
	NodeLost EventKind = iota + 1
	// NodeFailed: a member reported a failure with Round.Fail.
	NodeFailed
	// Superseded: the leader opened a newer round.
	Superseded
)

func (k EventKind) String() string {
	switch k {
	case NodeLost:
		return "node lost"
	case NodeFailed:
		return "node failed"
	case Superseded:
		return "superseded"
	}
	return "event " + strconv.Itoa(int(k))
}

// Event is something that ends the round for the member watching it.
type Event struct {
	Kind   EventKind
	Node   Member // the member concerned (zero for Superseded)
	Reason string
}

func (e Event) String() string {
	switch e.Kind {
	case Superseded:
		return "a newer round was opened: " + e.Reason
	default:
		return e.Node.String() + ": " + e.Reason
	}
}

// Backend is a rendezvous backend. Lead and Join may be called again for
// later rounds; Close ends every round of this member.
type Backend interface {
	// Lead opens a new round of the run for spec.NumNodes nodes, joins it
	// as self (self.Rank must be set) and returns once every node joined.
	Lead(ctx context.Context, spec Spec, self Member) (*Round, error)
	// Join waits for a round newer than after (a Round.ID; 0 for any),
	// joins it as self and returns once every node joined. A round whose
	// ranks are all taken, or that has no rank self can take, yields a
	// *RoundError wrapping ErrNoPlace; the caller may wait for the next
	// round (after that round's id).
	Join(ctx context.Context, self Member, after int64) (*Round, error)
	// Close releases the backend's connections (and a store it hosts).
	Close() error
}

// RoundError is an error about one round: a member that found no place in
// it, or a round whose nodes did not all join. A member that waits for
// rounds may skip to the next one.
type RoundError struct {
	Round int64
	Err   error
}

func (e *RoundError) Error() string { return e.Err.Error() }

// Unwrap returns the error.
func (e *RoundError) Unwrap() error { return e.Err }

// ErrNoPlace is wrapped when a member cannot take part in a round: the rank
// it asks for is taken or out of range, or every rank is taken.
var ErrNoPlace = errors.New("rendezvous: no place in this round")

// Round is a round every member has joined.
type Round struct {
	// ID identifies the round within the run; later rounds have larger IDs.
	ID int64
	// Spec is what the leader published.
	Spec Spec
	// Self is this member's node rank.
	Self int
	// Members are every node of the round, by node rank, with NProc
	// resolved.
	Members []Member

	impl      roundImpl
	closeOnce sync.Once
	closeErr  error
}

// roundImpl is the backend's side of a round.
type roundImpl interface {
	events(ctx context.Context, r *Round, out chan<- Event)
	mark(ctx context.Context, r *Round, failed bool, reason string) error
	close(r *Round) error
}

// WorldSize is the number of worker processes of the round.
func (r *Round) WorldSize() int {
	n := 0
	for _, m := range r.Members {
		n += m.NProc
	}
	return n
}

// RankBase is the global rank of node's first process: the processes of
// the lower node ranks come first.
func (r *Round) RankBase(node int) int {
	n := 0
	for _, m := range r.Members[:node] {
		n += m.NProc
	}
	return n
}

// Ranks returns the global ranks of node's processes.
func (r *Round) Ranks(node int) []int {
	base := r.RankBase(node)
	out := make([]int, r.Members[node].NProc)
	for i := range out {
		out[i] = base + i
	}
	return out
}

// Events reports, until ctx ends or the round is closed, what ends the
// round for this member. The channel is closed when watching stops.
func (r *Round) Events(ctx context.Context) <-chan Event {
	out := make(chan Event, 8)
	go func() { // owner: the caller, through ctx or Close
		defer close(out)
		r.impl.events(ctx, r, out)
	}()
	return out
}

// Fail tells the other members that this node's part failed.
func (r *Round) Fail(ctx context.Context, reason string) error {
	return r.impl.mark(ctx, r, true, reason)
}

// Finish tells the other members that this node's part ended cleanly.
func (r *Round) Finish(ctx context.Context) error {
	return r.impl.mark(ctx, r, false, "")
}

// Close leaves the round; a member that neither finished nor failed is
// reported to the others as having left. It may be called more than once.
func (r *Round) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.impl.close(r) })
	return r.closeErr
}

// Config selects and configures a backend.
type Config struct {
	// Backend is "etcd", "static" or "c10d".
	Backend string
	// Endpoint is host:port of the store, or etcd's client endpoints
	// (comma-separated host:port or URLs).
	Endpoint string
	// RunID separates runs sharing a store or an etcd cluster.
	RunID string
	// Conf holds RdzvConf: join_timeout and lease_ttl (seconds),
	// etcd_prefix, and for etcd protocol, cacert, cert, key, user, password,
	// password_file.
	Conf map[string]string
	// Secret admits members to the store backends' store (required there).
	Secret string
	// HostStore makes a "static" member host the store at Endpoint (the
	// leader does).
	HostStore bool
	// Logger receives diagnostics (default logrus.StandardLogger()).
	Logger logrus.FieldLogger
}

// New returns the backend cfg names. It does not wait for the store or the
// cluster to be reachable.
func New(cfg Config) (Backend, error) {
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	if cfg.RunID == "" {
		return nil, errors.New("rendezvous: empty run id")
	}
	switch strings.ToLower(cfg.Backend) {
	case "etcd":
		return newEtcd(cfg)
	case "static", "c10d":
		return newStoreBackend(cfg)
	}
	return nil, fmt.Errorf("rendezvous: unknown backend %q; choose between 'static', 'c10d' and 'etcd'", cfg.Backend)
}

// JoinTimeout returns RdzvConf's join_timeout, or DefaultJoinTimeout.
func JoinTimeout(conf map[string]string) (time.Duration, error) {
	return confSeconds(conf, "join_timeout", DefaultJoinTimeout)
}

func confSeconds(conf map[string]string, key string, def time.Duration) (time.Duration, error) {
	s := strings.TrimSpace(conf[key])
	if s == "" {
		return def, nil
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs <= 0 {
		return 0, fmt.Errorf("rendezvous: rdzv_conf %s %q is not a positive number of seconds", key, s)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// checkSpec validates what a leader publishes.
func checkSpec(spec Spec, self Member) error {
	if spec.NumNodes < 1 {
		return fmt.Errorf("rendezvous: a round needs at least 1 node, got %d", spec.NumNodes)
	}
	if self.Rank < 0 || self.Rank >= spec.NumNodes {
		return fmt.Errorf("rendezvous: the leader's node rank %d is out of range for %d nodes", self.Rank, spec.NumNodes)
	}
	if spec.NProc < 1 && self.NProc < 1 {
		return errors.New("rendezvous: the round's default number of processes per node must be at least 1")
	}
	return nil
}

// checkRank checks the node rank a joiner asks for.
func checkRank(id int64, spec Spec, rank int) error {
	switch {
	case rank >= spec.NumNodes:
		return fmt.Errorf("%w: node rank %d is out of range: round %d has %d nodes", ErrNoPlace, rank, id, spec.NumNodes)
	case rank == spec.Leader:
		return fmt.Errorf("%w: node rank %d is the leader's in round %d (the notebook that launched it)", ErrNoPlace, rank, id)
	}
	return nil
}

// resolve fills a member's defaults from the spec.
func resolve(m Member, spec Spec) Member {
	if m.NProc <= 0 {
		m.NProc = spec.NProc
	}
	return m
}

// missingError names the node ranks that did not join in time.
func missingError(id int64, spec Spec, present []bool, timeout time.Duration) error {
	var miss []string
	for r, ok := range present {
		if !ok {
			miss = append(miss, strconv.Itoa(r))
		}
	}
	what := "node " + strings.Join(miss, ", ")
	if len(miss) > 1 {
		what = "nodes " + strings.Join(miss, ", ")
	}
	return fmt.Errorf("rendezvous: %s of %d did not join round %d within %s (join_timeout): is a node agent (goaccel node) or the notebook running there, with the same rendezvous backend, endpoint and run id?",
		what, spec.NumNodes, id, timeout)
}

// OutboundHost returns the local address this host uses to reach endpoint
// (its first host:port or URL): the address a node advertises. No packet
// is sent.
func OutboundHost(endpoint string) (string, error) {
	ep := strings.TrimSpace(strings.Split(endpoint, ",")[0])
	if i := strings.Index(ep, "://"); i >= 0 {
		ep = ep[i+3:]
	}
	c, err := net.Dial("udp", ep)
	if err != nil {
		return "", fmt.Errorf("rendezvous: finding the local address towards %s: %w", ep, err)
	}
	defer c.Close()
	host, _, err := net.SplitHostPort(c.LocalAddr().String())
	return host, err
}
