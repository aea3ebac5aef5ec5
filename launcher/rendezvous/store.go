package rendezvous

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/accelerate/pg"
)

// The store backends poll the store at this pace while they wait (for a
// round, for the barrier) and while they watch a round; the store's
// blocking get makes most waits end as soon as the key appears.
const storePoll = 250 * time.Millisecond

// hostedCloseWait bounds how long a member that hosts the store keeps it up
// at Close for the members of its last round that have not finished.
const hostedCloseWait = 10 * time.Second

// storeBackend keeps rounds in the launch's pg store ("static", "c10d").
// Keys, under rdzv/<run>/:
//
//	rounds                 counter: the newest round's id (from the leader's clock, in ms, then +1)
//	r/<id>/spec            the Spec (JSON)
//	r/<id>/claim/<rank>    counter: 1 for the member that took the rank
//	r/<id>/node/<rank>     the Member (JSON)
//	r/<id>/joined          counter: members that joined
//	r/<id>/complete        set by the member whose join completed the round
//	r/<id>/failed          the last failure reported (JSON failure)
//	r/<id>/done/<rank>     the member finished cleanly
type storeBackend struct {
	kind        string // "static" or "c10d"
	endpoint    string
	secret      string
	prefix      string
	joinTimeout time.Duration
	log         logrus.FieldLogger

	mu         sync.Mutex
	hosted     *pg.Store
	hostedDone chan struct{}
	lastLed    *Round // the newest round this member led, for Close
}

func newStoreBackend(cfg Config) (*storeBackend, error) {
	kind := strings.ToLower(cfg.Backend)
	if cfg.Secret == "" {
		return nil, fmt.Errorf("rendezvous: the %q backend across nodes needs a secret shared by every node (RdzvConf \"secret_file\", the same file on every node): its store admits only processes that know it", kind)
	}
	if _, _, err := net.SplitHostPort(cfg.Endpoint); err != nil {
		return nil, fmt.Errorf("rendezvous: endpoint %q is not host:port: %w", cfg.Endpoint, err)
	}
	jt, err := JoinTimeout(cfg.Conf)
	if err != nil {
		return nil, err
	}
	b := &storeBackend{
		kind: kind, endpoint: cfg.Endpoint, secret: cfg.Secret,
		prefix: "rdzv/" + cfg.RunID + "/", joinTimeout: jt, log: cfg.Logger,
	}
	switch {
	case kind == "static" && cfg.HostStore:
		if err := b.host(); err != nil {
			return nil, fmt.Errorf("rendezvous: hosting the store at %s: %w", cfg.Endpoint, err)
		}
	case kind == "c10d":
		if err := b.host(); err != nil {
			b.log.Debugf("rendezvous: not hosting the c10d store (%v); connecting to it", err)
		}
	}
	return b, nil
}

// host starts serving the store at the endpoint unless this member already
// does.
func (b *storeBackend) host() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hosted != nil {
		return nil
	}
	st, err := pg.NewStore(b.endpoint, b.secret, pg.WithStoreLogger(b.log))
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { // owner: the backend; ends when Close closes the store
		defer close(done)
		if err := st.Serve(context.Background()); err != nil {
			b.log.WithError(err).Warn("rendezvous: the store stopped")
		}
	}()
	b.hosted, b.hostedDone = st, done
	b.log.Debugf("rendezvous: hosting the %s store at %s", b.kind, st.Addr())
	return nil
}

// dial connects to the store, waiting for it to come up; a c10d member
// whose endpoint is free meanwhile takes over hosting it.
func (b *storeBackend) dial(ctx context.Context) (*pg.StoreClient, error) {
	for {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := pg.DialStore(dctx, b.endpoint, b.secret)
		cancel()
		if err == nil {
			return c, nil
		}
		if errors.Is(err, pg.ErrAuth) {
			return nil, fmt.Errorf("rendezvous: the store at %s refused this node: %w (is secret_file the same file on every node?)", b.endpoint, err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rendezvous: waiting for the store at %s: %w", b.endpoint, ctx.Err())
		}
		if b.kind == "c10d" {
			_ = b.host()
		}
	}
}

func (b *storeBackend) key(id int64, parts ...string) string {
	k := b.prefix + "r/" + strconv.FormatInt(id, 10)
	for _, p := range parts {
		k += "/" + p
	}
	return k
}

func (b *storeBackend) Lead(ctx context.Context, spec Spec, self Member) (*Round, error) {
	if err := checkSpec(spec, self); err != nil {
		return nil, err
	}
	self = resolve(self, spec)
	spec.Leader = self.Rank
	c, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// In a fresh store (each static launch hosts one) the ids start from the
	// clock, so that they stay larger than those of the stores before it,
	// which members waiting for "a round after" remember.
	id, err := c.Add(ctx, b.prefix+"rounds", 0)
	if err == nil {
		delta := int64(1)
		if id == 0 {
			delta = time.Now().UnixMilli()
		}
		id, err = c.Add(ctx, b.prefix+"rounds", delta)
	}
	if err != nil {
		return nil, fmt.Errorf("rendezvous: opening a round: %w", err)
	}
	sb, _ := json.Marshal(spec)
	if err := c.Set(ctx, b.key(id, "spec"), sb); err != nil {
		return nil, fmt.Errorf("rendezvous: opening round %d: %w", id, err)
	}
	if err := b.claim(ctx, c, id, self); err != nil {
		return nil, err
	}
	r, err := b.barrier(ctx, c, id, spec, self, true)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.lastLed = r
	b.mu.Unlock()
	return r, nil
}

func (b *storeBackend) Join(ctx context.Context, self Member, after int64) (*Round, error) {
	c, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for {
		id, spec, err := b.nextRound(ctx, c, after)
		if err != nil {
			return nil, err
		}
		me := resolve(self, spec)
		ranks := []int{me.Rank}
		if me.Rank < 0 {
			ranks = ranks[:0]
			for r := 0; r < spec.NumNodes; r++ {
				if r != spec.Leader {
					ranks = append(ranks, r)
				}
			}
		} else if err := checkRank(id, spec, me.Rank); err != nil {
			return nil, &RoundError{Round: id, Err: err}
		}
		var claimErr error
		taken := false
		for _, r := range ranks {
			me.Rank = r
			if claimErr = b.claim(ctx, c, id, me); claimErr == nil {
				taken = true
				break
			}
			if !errors.Is(claimErr, ErrNoPlace) {
				return nil, claimErr
			}
		}
		if !taken {
			if self.Rank < 0 {
				claimErr = fmt.Errorf("%w: every node rank of round %d is taken", ErrNoPlace, id)
			}
			return nil, &RoundError{Round: id, Err: claimErr}
		}
		r, err := b.barrier(ctx, c, id, spec, me, false)
		if errors.Is(err, errSuperseded) {
			after = id
			continue
		}
		if err != nil {
			return nil, &RoundError{Round: id, Err: err}
		}
		return r, nil
	}
}

// nextRound waits for a round newer than after and returns it.
func (b *storeBackend) nextRound(ctx context.Context, c *pg.StoreClient, after int64) (int64, Spec, error) {
	for {
		cur, err := c.Add(ctx, b.prefix+"rounds", 0)
		if err != nil {
			return 0, Spec{}, fmt.Errorf("rendezvous: waiting for a round: %w", err)
		}
		if cur > after {
			sb, err := c.GetWait(ctx, b.key(cur, "spec"), 10*time.Second)
			if err != nil {
				return 0, Spec{}, fmt.Errorf("rendezvous: reading round %d: %w", cur, err)
			}
			var spec Spec
			if err := json.Unmarshal(sb, &spec); err != nil {
				return 0, Spec{}, fmt.Errorf("rendezvous: round %d: bad spec: %w", cur, err)
			}
			return cur, spec, nil
		}
		_, err = c.GetWait(ctx, b.key(cur+1, "spec"), time.Second)
		if err != nil && !errors.Is(err, pg.ErrKeyTimeout) {
			return 0, Spec{}, fmt.Errorf("rendezvous: waiting for a round: %w", err)
		}
	}
}

// claim takes self.Rank in round id and registers self.
func (b *storeBackend) claim(ctx context.Context, c *pg.StoreClient, id int64, self Member) error {
	n, err := c.Add(ctx, b.key(id, "claim", strconv.Itoa(self.Rank)), 1)
	if err != nil {
		return fmt.Errorf("rendezvous: joining round %d: %w", id, err)
	}
	if n > 1 {
		holder := "another member"
		if mb, err := c.GetWait(ctx, b.key(id, "node", strconv.Itoa(self.Rank)), time.Second); err == nil {
			var m Member
			if json.Unmarshal(mb, &m) == nil {
				holder = fmt.Sprintf("%s (pid %d)", m, m.PID)
			}
		}
		return fmt.Errorf("%w: node rank %d of round %d is taken by %s", ErrNoPlace, self.Rank, id, holder)
	}
	mb, _ := json.Marshal(self)
	if err := c.Set(ctx, b.key(id, "node", strconv.Itoa(self.Rank)), mb); err != nil {
		return fmt.Errorf("rendezvous: joining round %d: %w", id, err)
	}
	return nil
}

var errSuperseded = errors.New("rendezvous: the round was superseded")

// barrier counts self in and waits until every node of round id joined.
func (b *storeBackend) barrier(ctx context.Context, c *pg.StoreClient, id int64, spec Spec, self Member, leader bool) (*Round, error) {
	n, err := c.Add(ctx, b.key(id, "joined"), 1)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: round %d: %w", id, err)
	}
	if n == int64(spec.NumNodes) {
		if err := c.Set(ctx, b.key(id, "complete"), []byte("1")); err != nil {
			return nil, fmt.Errorf("rendezvous: round %d: %w", id, err)
		}
	}
	deadline := time.Now().Add(b.joinTimeout)
	for {
		_, err := c.GetWait(ctx, b.key(id, "complete"), time.Second)
		if err == nil {
			break
		}
		if !errors.Is(err, pg.ErrKeyTimeout) {
			return nil, fmt.Errorf("rendezvous: waiting for the nodes of round %d: %w", id, err)
		}
		if cur, err := c.Add(ctx, b.prefix+"rounds", 0); err == nil && cur > id {
			if leader {
				return nil, fmt.Errorf("rendezvous: another leader opened round %d of run %q while this one waited for round %d (two launches with the same RdzvID?)", cur, b.prefix, id)
			}
			return nil, errSuperseded
		}
		if time.Now().After(deadline) {
			keys := make([]string, spec.NumNodes)
			for r := range keys {
				keys[r] = b.key(id, "node", strconv.Itoa(r))
			}
			present, err := c.Check(ctx, keys...)
			if err != nil {
				return nil, fmt.Errorf("rendezvous: round %d: %w", id, err)
			}
			return nil, missingError(id, spec, present, b.joinTimeout)
		}
	}
	members := make([]Member, spec.NumNodes)
	for r := range members {
		mb, err := c.Get(ctx, b.key(id, "node", strconv.Itoa(r)))
		if err != nil {
			return nil, fmt.Errorf("rendezvous: round %d: reading node %d: %w", id, r, err)
		}
		if err := json.Unmarshal(mb, &members[r]); err != nil {
			return nil, fmt.Errorf("rendezvous: round %d: node %d: %w", id, r, err)
		}
	}
	return &Round{ID: id, Spec: spec, Self: self.Rank, Members: members, impl: &storeRound{b: b}}, nil
}

// storeRound is a round in the store.
type storeRound struct {
	b      *storeBackend
	mu     sync.Mutex
	marked bool
}

type failure struct {
	Rank   int    `json:"rank"`
	Reason string `json:"reason"`
}

func (s *storeRound) events(ctx context.Context, r *Round, out chan<- Event) {
	c, err := s.b.dial(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	leader := r.Spec.Leader
	failedKey, leaderDone := s.b.key(r.ID, "failed"), s.b.key(r.ID, "done", strconv.Itoa(leader))
	leaderFinished := false
	send := func(e Event) bool {
		select {
		case out <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		fb, err := c.GetWait(ctx, failedKey, storePoll)
		switch {
		case err == nil:
			var f failure
			if json.Unmarshal(fb, &f) == nil && f.Rank != r.Self && f.Rank >= 0 && f.Rank < len(r.Members) {
				send(Event{Kind: NodeFailed, Node: r.Members[f.Rank], Reason: f.Reason})
				return
			}
			if f.Rank == r.Self {
				return // this member's own report: it knows
			}
		case ctx.Err() != nil:
			return
		case !errors.Is(err, pg.ErrKeyTimeout):
			if leaderFinished || r.Self == leader {
				return
			}
			node := Member{Rank: -1, Host: s.b.endpoint}
			if s.b.kind == "static" {
				node = r.Members[leader]
			}
			send(Event{Kind: NodeLost, Node: node, Reason: fmt.Sprintf("the rendezvous store at %s closed before the round finished (%v)", s.b.endpoint, err)})
			return
		}
		if cur, err := c.Add(ctx, s.b.prefix+"rounds", 0); err == nil && cur > r.ID {
			send(Event{Kind: Superseded, Reason: fmt.Sprintf("round %d replaced round %d", cur, r.ID)})
			return
		}
		if !leaderFinished {
			if ok, err := c.Check(ctx, leaderDone); err == nil && ok[0] {
				leaderFinished = true
			}
		}
	}
}

func (s *storeRound) mark(ctx context.Context, r *Round, failed bool, reason string) error {
	c, err := s.b.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	s.mu.Lock()
	s.marked = true
	s.mu.Unlock()
	if failed {
		fb, _ := json.Marshal(failure{Rank: r.Self, Reason: reason})
		return c.Set(ctx, s.b.key(r.ID, "failed"), fb)
	}
	return c.Set(ctx, s.b.key(r.ID, "done", strconv.Itoa(r.Self)), []byte("1"))
}

func (s *storeRound) close(r *Round) error {
	s.mu.Lock()
	marked := s.marked
	s.mu.Unlock()
	if marked {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.mark(ctx, r, true, "it left the round without finishing")
}

// Close stops hosting the store, after giving the members of the last round
// this member led up to hostedCloseWait to finish.
func (b *storeBackend) Close() error {
	b.mu.Lock()
	st, done, last := b.hosted, b.hostedDone, b.lastLed
	b.hosted = nil
	b.mu.Unlock()
	if st == nil {
		return nil
	}
	if last != nil {
		b.waitFinished(last)
	}
	err := st.Close()
	<-done
	return err
}

// waitFinished waits until every member of r finished or failed.
func (b *storeBackend) waitFinished(r *Round) {
	ctx, cancel := context.WithTimeout(context.Background(), hostedCloseWait)
	defer cancel()
	c, err := pg.DialStore(ctx, b.endpoint, b.secret)
	if err != nil {
		return
	}
	defer c.Close()
	keys := []string{b.key(r.ID, "failed")}
	for m := range r.Members {
		keys = append(keys, b.key(r.ID, "done", strconv.Itoa(m)))
	}
	for ctx.Err() == nil {
		ok, err := c.Check(ctx, keys...)
		if err != nil {
			return
		}
		all := true
		for _, v := range ok[1:] {
			all = all && v
		}
		if ok[0] || all {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(storePoll):
		}
	}
}
