package rendezvous

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// markerTTL is how long the done and failed markers of a round stay in
// etcd (the next round of the run removes them earlier).
const markerTTL = 3600

// etcdBackend keeps rounds in etcd. Keys, under <etcd_prefix>/<run>/:
//
//	round                        the open round's Spec; its mod revision is the round id;
//	                             bound to the leader's lease
//	r/<id, 20 digits>/node/<rank>    the Member, bound to the member's lease
//	r/<id>/done/<rank>           the member finished cleanly
//	r/<id>/failed/<rank>         the member failed (the reason)
type etcdBackend struct {
	cli         *clientv3.Client // for waiting between rounds; rounds have their own (session)
	ccfg        clientv3.Config
	endpoint    string
	prefix      string
	joinTimeout time.Duration
	ttl         int // lease TTL, seconds
	log         logrus.FieldLogger

	// cluster is the id of the etcd cluster of the last round joined: an
	// embedded etcd lives for one launch, and the next one's revisions
	// (round ids) start again from 1.
	cluster atomic.Uint64
}

func newEtcd(cfg Config) (*etcdBackend, error) {
	ccfg, err := EtcdClientConfig(cfg.Endpoint, cfg.Conf, cfg.Logger)
	if err != nil {
		return nil, err
	}
	jt, err := JoinTimeout(cfg.Conf)
	if err != nil {
		return nil, err
	}
	ttl, err := confSeconds(cfg.Conf, "lease_ttl", DefaultLeaseTTL)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimRight(cfg.Conf["etcd_prefix"], "/")
	if prefix == "" {
		prefix = DefaultEtcdPrefix
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: etcd client for %s: %w", cfg.Endpoint, err)
	}
	return &etcdBackend{
		cli: cli, ccfg: ccfg, endpoint: cfg.Endpoint, prefix: prefix + "/" + cfg.RunID + "/",
		joinTimeout: jt, ttl: max(1, int((ttl+time.Second-1)/time.Second)), log: cfg.Logger,
	}, nil
}

func (b *etcdBackend) Close() error { return b.cli.Close() }

func (b *etcdBackend) roundKey() string { return b.prefix + "round" }

func (b *etcdBackend) key(id int64, kind string, rank int) string {
	k := fmt.Sprintf("%sr/%020d/%s/", b.prefix, id, kind)
	if rank >= 0 {
		k += strconv.Itoa(rank)
	}
	return k
}

// session grants this member's lease for a round and keeps it alive, on a
// client of its own: the streams a round needs (keep-alives, watches) end
// with the round, so that an embedded etcd closing after the launch has no
// client streams to wait for (etcd waits up to 7 s for them).
func (b *etcdBackend) session(ctx context.Context) (*concurrency.Session, error) {
	cli, err := clientv3.New(b.ccfg)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: etcd client for %s: %w", b.endpoint, err)
	}
	lease, err := cli.Grant(ctx, int64(b.ttl))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("rendezvous: etcd at %s: %w", b.endpoint, etcdErr(ctx, err))
	}
	// The keep-alives outlive ctx: they last until the round is closed.
	s, err := concurrency.NewSession(cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(b.ttl),
		concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("rendezvous: etcd at %s: %w", b.endpoint, etcdErr(ctx, err))
	}
	return s, nil
}

// endSession revokes a session's lease (bounded by closeTimeout: the lease
// expires anyway) and closes its client.
func endSession(s *concurrency.Session) error {
	s.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, err := s.Client().Revoke(ctx, s.Lease())
	s.Client().Close()
	return err
}

// etcdErr explains an error of the etcd client.
func etcdErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (the etcd cluster did not answer; is it up and reachable?)", err)
	}
	return err
}

// connectTimeout bounds how long a leader waits for etcd to answer;
// closeTimeout how long leaving a round may wait for it; rewatchEvery how
// often a member waiting for a round renews its watch; joinerGrace how
// much longer than the leader a member waits for a round to complete.
const (
	connectTimeout = 15 * time.Second
	closeTimeout   = 2 * time.Second
	rewatchEvery   = 500 * time.Millisecond
	joinerGrace    = 10 * time.Second
)

func (b *etcdBackend) Lead(ctx context.Context, spec Spec, self Member) (*Round, error) {
	if err := checkSpec(spec, self); err != nil {
		return nil, err
	}
	self = resolve(self, spec)
	self.LeaseTTL = b.ttl
	spec.Leader = self.Rank
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	sess, err := b.session(cctx)
	cancel()
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			endSession(sess)
		}
	}()
	sb, _ := json.Marshal(spec)
	resp, err := b.cli.Put(ctx, b.roundKey(), string(sb), clientv3.WithLease(sess.Lease()))
	if err != nil {
		return nil, fmt.Errorf("rendezvous: opening a round in etcd at %s: %w", b.endpoint, etcdErr(ctx, err))
	}
	id := resp.Header.Revision
	mb, _ := json.Marshal(self)
	if _, err := b.cli.Put(ctx, b.key(id, "node", self.Rank), string(mb), clientv3.WithLease(sess.Lease())); err != nil {
		return nil, fmt.Errorf("rendezvous: joining round %d: %w", id, etcdErr(ctx, err))
	}
	// The keys of earlier rounds of the run are of no use any more.
	if _, err := b.cli.Delete(ctx, b.prefix+"r/", clientv3.WithRange(fmt.Sprintf("%sr/%020d", b.prefix, id))); err != nil {
		b.log.WithError(err).Debug("rendezvous: removing the keys of earlier rounds")
	}
	r, err := b.barrier(ctx, id, spec, self, sess, true)
	if err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

func (b *etcdBackend) Join(ctx context.Context, self Member, after int64) (*Round, error) {
	for {
		id, spec, err := b.nextRound(ctx, after)
		if err != nil {
			return nil, err
		}
		r, err := b.joinRound(ctx, id, spec, self)
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

// nextRound waits for a round newer than after. Its watch is renewed every
// rewatchEvery: a member waiting between launches then holds no stream for
// long, which an embedded etcd stopping at the end of a launch waits for,
// and a watch that survived its etcd being replaced by the next launch's
// (waiting for revisions of the old one) is dropped soon.
func (b *etcdBackend) nextRound(ctx context.Context, after int64) (int64, Spec, error) {
	for {
		resp, err := b.cli.Get(ctx, b.roundKey())
		if err != nil {
			if ctx.Err() != nil {
				return 0, Spec{}, fmt.Errorf("rendezvous: waiting for a round in etcd at %s: %w", b.endpoint, ctx.Err())
			}
			b.log.WithError(err).Debug("rendezvous: etcd not reachable yet")
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		if c := b.cluster.Load(); after > 0 && c != 0 && resp.Header.ClusterId != c {
			after = 0 // another cluster: its rounds are all new
		}
		if len(resp.Kvs) == 1 && resp.Kvs[0].ModRevision > after {
			return parseRound(resp.Kvs[0].ModRevision, resp.Kvs[0].Value)
		}
		wctx, cancel := context.WithTimeout(ctx, rewatchEvery)
		wch := b.cli.Watch(wctx, b.roundKey(), clientv3.WithRev(resp.Header.Revision+1))
		for wr := range wch {
			if wr.Header.ClusterId != resp.Header.ClusterId {
				break
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut && ev.Kv.ModRevision > after {
					cancel()
					return parseRound(ev.Kv.ModRevision, ev.Kv.Value)
				}
			}
		}
		cancel()
	}
}

func parseRound(id int64, v []byte) (int64, Spec, error) {
	var spec Spec
	if err := json.Unmarshal(v, &spec); err != nil {
		return 0, Spec{}, fmt.Errorf("rendezvous: round %d: bad spec: %w", id, err)
	}
	return id, spec, nil
}

// joinRound takes a rank in round id and waits for the barrier.
func (b *etcdBackend) joinRound(ctx context.Context, id int64, spec Spec, self Member) (*Round, error) {
	me := resolve(self, spec)
	me.LeaseTTL = b.ttl
	ranks := []int{me.Rank}
	if me.Rank < 0 {
		ranks = ranks[:0]
		for r := 0; r < spec.NumNodes; r++ {
			if r != spec.Leader {
				ranks = append(ranks, r)
			}
		}
	} else if err := checkRank(id, spec, me.Rank); err != nil {
		return nil, err
	}
	sess, err := b.session(ctx)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			endSession(sess)
		}
	}()
	var lastTaken string
	for _, rank := range ranks {
		me.Rank = rank
		mb, _ := json.Marshal(me)
		nk := b.key(id, "node", rank)
		tr, err := b.cli.Txn(ctx).If(
			clientv3.Compare(clientv3.ModRevision(b.roundKey()), "=", id),
			clientv3.Compare(clientv3.CreateRevision(nk), "=", 0),
		).Then(clientv3.OpPut(nk, string(mb), clientv3.WithLease(sess.Lease()))).
			Else(clientv3.OpGet(b.roundKey()), clientv3.OpGet(nk)).Commit()
		if err != nil {
			return nil, fmt.Errorf("rendezvous: joining round %d: %w", id, etcdErr(ctx, err))
		}
		if tr.Succeeded {
			r, err := b.barrier(ctx, id, spec, me, sess, false)
			if err == nil {
				ok = true
			}
			return r, err
		}
		if rk := tr.Responses[0].GetResponseRange().Kvs; len(rk) == 0 || rk[0].ModRevision != id {
			return nil, errSuperseded
		}
		holder := "another member"
		if nkv := tr.Responses[1].GetResponseRange().Kvs; len(nkv) == 1 {
			var m Member
			if json.Unmarshal(nkv[0].Value, &m) == nil {
				holder = fmt.Sprintf("%s (pid %d)", m, m.PID)
			}
		}
		lastTaken = fmt.Sprintf("node rank %d of round %d is taken by %s", rank, id, holder)
	}
	if self.Rank < 0 {
		return nil, fmt.Errorf("%w: every node rank of round %d is taken", ErrNoPlace, id)
	}
	return nil, fmt.Errorf("%w: %s", ErrNoPlace, lastTaken)
}

// barrier waits until every node of round id has its key.
func (b *etcdBackend) barrier(ctx context.Context, id int64, spec Spec, self Member, sess *concurrency.Session, leader bool) (*Round, error) {
	// The leader names the nodes that did not join, and gives the round up
	// (its lease, and with it the round key, goes). A member whose own
	// deadline passed first would revoke its key just before the leader's
	// last look, and be named missing with the others: members wait a
	// grace period longer, for the leader's verdict.
	wait := b.joinTimeout
	if !leader {
		wait += joinerGrace
	}
	deadline := time.Now().Add(wait)
	nodes := b.key(id, "node", -1)
	for {
		tr, err := b.cli.Txn(ctx).Then(clientv3.OpGet(nodes, clientv3.WithPrefix()), clientv3.OpGet(b.roundKey())).Commit()
		if err != nil {
			return nil, fmt.Errorf("rendezvous: waiting for the nodes of round %d: %w", id, etcdErr(ctx, err))
		}
		if rk := tr.Responses[1].GetResponseRange().Kvs; len(rk) == 0 || rk[0].ModRevision != id {
			if leader {
				return nil, fmt.Errorf("rendezvous: round %d of %s was replaced or removed while its leader waited (another launch with the same RdzvID, or this node's lease expired)", id, b.prefix)
			}
			return nil, errSuperseded
		}
		kvs := tr.Responses[0].GetResponseRange().Kvs
		present := make([]bool, spec.NumNodes)
		members := make([]Member, spec.NumNodes)
		for _, kv := range kvs {
			var m Member
			if json.Unmarshal(kv.Value, &m) == nil && m.Rank >= 0 && m.Rank < spec.NumNodes {
				present[m.Rank], members[m.Rank] = true, m
			}
		}
		if len(kvs) >= spec.NumNodes {
			b.cluster.Store(tr.Header.ClusterId)
			return &Round{ID: id, Spec: spec, Self: self.Rank, Members: members,
				impl: &etcdRound{b: b, sess: sess, rev: tr.Header.Revision}}, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, missingError(id, spec, present, wait)
		}
		wctx, cancel := context.WithTimeout(ctx, left)
		wch := b.cli.Watch(wctx, b.prefix, clientv3.WithPrefix(), clientv3.WithRev(tr.Header.Revision+1))
		select {
		case <-wch:
		case <-sess.Done():
			cancel()
			return nil, fmt.Errorf("rendezvous: this node's lease in etcd at %s expired while it waited for round %d", b.endpoint, id)
		}
		cancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rendezvous: waiting for the nodes of round %d: %w", id, ctx.Err())
		}
	}
}

// etcdRound is a round in etcd, with this member's lease.
type etcdRound struct {
	b    *etcdBackend
	sess *concurrency.Session
	rev  int64 // revision at which the barrier completed

	mu     sync.Mutex
	marked bool
}

func (e *etcdRound) events(ctx context.Context, r *Round, out chan<- Event) {
	b := e.b
	send := func(ev Event) {
		select {
		case out <- ev:
		case <-ctx.Done():
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := e.sess.Client().Watch(wctx, b.prefix, clientv3.WithPrefix(), clientv3.WithRev(e.rev+1))
	nodes, failed := b.key(r.ID, "node", -1), b.key(r.ID, "failed", -1)
	member := func(k, p string) (Member, bool) {
		n, err := strconv.Atoi(strings.TrimPrefix(k, p))
		if err != nil || n < 0 || n >= len(r.Members) {
			return Member{}, false
		}
		return r.Members[n], true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.sess.Done():
			if ctx.Err() == nil {
				send(Event{Kind: NodeLost, Node: r.Members[r.Self], Reason: fmt.Sprintf("this node's rendezvous lease expired: etcd at %s did not answer its keep-alives within lease_ttl (%ds)", b.endpoint, b.ttl)})
			}
			return
		case wr, ok := <-wch:
			if !ok {
				return
			}
			for _, ev := range wr.Events {
				k := string(ev.Kv.Key)
				switch {
				case k == b.roundKey() && ev.Type == clientv3.EventTypePut && ev.Kv.ModRevision > r.ID:
					send(Event{Kind: Superseded, Reason: fmt.Sprintf("round %d replaced round %d", ev.Kv.ModRevision, r.ID)})
					return
				case strings.HasPrefix(k, failed) && ev.Type == clientv3.EventTypePut:
					if m, ok := member(k, failed); ok && m.Rank != r.Self {
						send(Event{Kind: NodeFailed, Node: m, Reason: string(ev.Kv.Value)})
						return
					}
				case strings.HasPrefix(k, nodes) && ev.Type == clientv3.EventTypeDelete:
					m, ok := member(k, nodes)
					if !ok || m.Rank == r.Self {
						continue
					}
					if reason, lost := e.departure(ctx, r, m.Rank, ev.Kv.ModRevision); lost {
						send(Event{Kind: NodeLost, Node: m, Reason: reason})
						return
					}
				}
			}
		}
	}
}

// departure tells whether a member whose key was deleted at rev left
// without finishing, and how.
func (e *etcdRound) departure(ctx context.Context, r *Round, rank int, rev int64) (string, bool) {
	tr, err := e.b.cli.Txn(ctx).Then(
		clientv3.OpGet(e.b.key(r.ID, "done", rank), clientv3.WithRev(rev)),
		clientv3.OpGet(e.b.key(r.ID, "failed", rank), clientv3.WithRev(rev)),
	).Commit()
	if err != nil {
		return fmt.Sprintf("its key was removed and etcd could not say why (%v)", err), true
	}
	if len(tr.Responses[0].GetResponseRange().Kvs) > 0 {
		return "", false
	}
	if f := tr.Responses[1].GetResponseRange().Kvs; len(f) > 0 {
		return string(f[0].Value), true
	}
	ttl := ""
	if t := r.Members[rank].LeaseTTL; t > 0 {
		ttl = fmt.Sprintf(" (%ds)", t)
	}
	return fmt.Sprintf("its rendezvous lease expired: no keep-alive within its lease_ttl%s; the node died or is cut off", ttl), true
}

func (e *etcdRound) mark(ctx context.Context, r *Round, failed bool, reason string) error {
	e.mu.Lock()
	e.marked = true
	e.mu.Unlock()
	lease, err := e.b.cli.Grant(ctx, markerTTL)
	if err != nil {
		return fmt.Errorf("rendezvous: etcd at %s: %w", e.b.endpoint, etcdErr(ctx, err))
	}
	k, v := e.b.key(r.ID, "done", r.Self), ""
	if failed {
		k, v = e.b.key(r.ID, "failed", r.Self), reason
	}
	if _, err := e.b.cli.Put(ctx, k, v, clientv3.WithLease(lease.ID)); err != nil {
		return fmt.Errorf("rendezvous: etcd at %s: %w", e.b.endpoint, etcdErr(ctx, err))
	}
	return nil
}

func (e *etcdRound) close(r *Round) error {
	e.mu.Lock()
	marked := e.marked
	e.mu.Unlock()
	var err error
	if !marked {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		err = e.mark(ctx, r, true, "it left the round without finishing")
		cancel()
	}
	// Revoking the lease removes this member's key.
	if rerr := endSession(e.sess); rerr != nil && err == nil {
		err = fmt.Errorf("rendezvous: releasing this node's lease: %w", rerr)
	}
	return err
}
