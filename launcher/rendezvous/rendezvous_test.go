package rendezvous_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/launcher/rendezvous"
)

// A backend under test: newMember returns a fresh member's backend (its own
// connections), the first one created for static being the store's host.
type kind struct {
	name      string
	newMember func(t *testing.T, conf map[string]string) rendezvous.Backend
}

// patience bounds every wait in these tests that must not time out (a
// round forming, an event arriving): a hang guard far above what a cold,
// busy machine needs (etcd included), never a budget.
const patience = 10 * time.Minute

// prompt is what "ended by its own timeout" means against the default
// join_timeout (600 s): it proves the point however busy the machine.
const prompt = 2 * time.Minute

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return l
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func withConf(base, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// kinds returns the three backends, each with its own store or cluster.
func kinds(t *testing.T) []kind {
	storeKind := func(backend string) kind {
		var mu sync.Mutex
		endpoint, hosted := "", false
		return kind{backend, func(t *testing.T, conf map[string]string) rendezvous.Backend {
			mu.Lock()
			if endpoint == "" {
				endpoint = freeAddr(t)
			}
			host := !hosted
			hosted = true
			mu.Unlock()
			b, err := rendezvous.New(rendezvous.Config{
				Backend: backend, Endpoint: endpoint, RunID: "run1", Conf: conf,
				Secret: "shared-secret", HostStore: host, Logger: quietLog(),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}}
	}
	var once sync.Once
	var emb *rendezvous.Embedded
	etcdKind := kind{"etcd", func(t *testing.T, conf map[string]string) rendezvous.Backend {
		once.Do(func() { emb = startEmbedded(t) })
		b, err := rendezvous.New(rendezvous.Config{
			Backend: "etcd", Endpoint: emb.Endpoint(), RunID: "run1", Conf: conf, Logger: quietLog(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}}
	return []kind{storeKind("static"), storeKind("c10d"), etcdKind}
}

func startEmbedded(t *testing.T) *rendezvous.Embedded {
	t.Helper()
	_, port, _ := net.SplitHostPort(freeAddr(t))
	emb, err := rendezvous.StartEmbedded(context.Background(), "127.0.0.1", port, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	return emb
}

func forEachKind(t *testing.T, f func(t *testing.T, k kind)) {
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

type joined struct {
	r   *rendezvous.Round
	err error
}

func join(ctx context.Context, b rendezvous.Backend, m rendezvous.Member, after int64) <-chan joined {
	ch := make(chan joined, 1)
	go func() {
		r, err := b.Join(ctx, m, after)
		ch <- joined{r, err}
	}()
	return ch
}

func must(t *testing.T, j joined) *rendezvous.Round {
	t.Helper()
	if j.err != nil {
		t.Fatal(j.err)
	}
	return j.r
}

func TestRoundAcrossThreeNodes(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		lead := k.newMember(t, nil)
		// Joiners may come before the round is opened: they wait for it.
		a := join(ctx, k.newMember(t, nil), rendezvous.Member{Rank: 2, Host: "10.0.0.3", NProc: 3, Agent: true}, 0)
		b := join(ctx, k.newMember(t, nil), rendezvous.Member{Rank: -1, Host: "10.0.0.2", Agent: true}, 0)
		time.Sleep(300 * time.Millisecond)
		r0, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 3, NProc: 2, Values: map[string]string{"store": "10.0.0.1:1234"}},
			rendezvous.Member{Rank: 0, Host: "10.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		r2, r1 := must(t, <-a), must(t, <-b)
		if r0.ID != r1.ID || r0.ID != r2.ID || r0.ID <= 0 {
			t.Fatalf("round ids %d %d %d", r0.ID, r1.ID, r2.ID)
		}
		if r0.Self != 0 || r1.Self != 1 || r2.Self != 2 {
			t.Errorf("ranks %d %d %d, want 0 1 2 (the rank-less joiner takes the free one)", r0.Self, r1.Self, r2.Self)
		}
		for _, r := range []*rendezvous.Round{r0, r1, r2} {
			if r.Spec.Values["store"] != "10.0.0.1:1234" || r.Spec.NumNodes != 3 || r.Spec.Leader != 0 {
				t.Errorf("node %d sees spec %+v", r.Self, r.Spec)
			}
			hosts := []string{r.Members[0].Host, r.Members[1].Host, r.Members[2].Host}
			if strings.Join(hosts, " ") != "10.0.0.1 10.0.0.2 10.0.0.3" {
				t.Errorf("node %d sees hosts %v", r.Self, hosts)
			}
			// NProc 0 means the spec's 2; node 2 runs 3.
			if r.WorldSize() != 7 || r.RankBase(2) != 4 || !slices.Equal(r.Ranks(1), []int{2, 3}) {
				t.Errorf("node %d: world %d, base(2) %d, ranks(1) %v", r.Self, r.WorldSize(), r.RankBase(2), r.Ranks(1))
			}
			if !r.Members[2].Agent || r.Members[0].Agent {
				t.Errorf("agent flags %+v", r.Members)
			}
		}
		for _, r := range []*rendezvous.Round{r0, r1, r2} {
			if err := r.Finish(ctx); err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
	})
}

func TestMissingNodeNamed(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Roomy enough that node 1 joins in time on a loaded machine.
		conf := map[string]string{"join_timeout": "10"}
		lead := k.newMember(t, conf)
		// Node 1's own timeout passes long before the leader's: it must
		// not leave (and be named missing) before the leader's verdict.
		b := join(ctx, k.newMember(t, map[string]string{"join_timeout": "1"}), rendezvous.Member{Rank: 1}, 0)
		start := time.Now()
		_, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 3, NProc: 1}, rendezvous.Member{Rank: 0})
		if err == nil || !strings.Contains(err.Error(), "node 2 of 3 did not join round") || !strings.Contains(err.Error(), "within 10s") {
			t.Fatalf("error %v", err)
		}
		if d := time.Since(start); d > prompt {
			t.Errorf("took %s with a join_timeout of 10 s (the default is %s)", d, rendezvous.DefaultJoinTimeout)
		}
		// The joiner either timed out as well or, having seen the leader
		// give the round up, waits for the next one.
		cancel()
		if j := <-b; j.err == nil {
			t.Errorf("the joiner of an incomplete round got %+v", j.r)
		}
	})
}

func TestRankTakenAndOutOfRange(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		lead := k.newMember(t, nil) // the default join_timeout: node 1 comes
		first := join(ctx, k.newMember(t, nil), rendezvous.Member{Rank: 1, Host: "10.0.0.2", PID: 42}, 0)
		led := make(chan joined, 1)
		go func() {
			r, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 2, NProc: 1}, rendezvous.Member{Rank: 0, Host: "10.0.0.1"})
			led <- joined{r, err}
		}()
		r1 := must(t, <-first)
		r0 := must(t, <-led)
		_, err := k.newMember(t, nil).Join(ctx, rendezvous.Member{Rank: 1, Host: "10.0.0.9"}, 0)
		if !errors.Is(err, rendezvous.ErrNoPlace) || !strings.Contains(err.Error(), "node rank 1 of round") ||
			!strings.Contains(err.Error(), "node 1 (10.0.0.2) (pid 42)") {
			t.Errorf("second rank 1: %v", err)
		}
		_, err = k.newMember(t, nil).Join(ctx, rendezvous.Member{Rank: -1}, 0)
		if !errors.Is(err, rendezvous.ErrNoPlace) || !strings.Contains(err.Error(), "every node rank") {
			t.Errorf("full round: %v", err)
		}
		_, err = k.newMember(t, nil).Join(ctx, rendezvous.Member{Rank: 5}, 0)
		if !errors.Is(err, rendezvous.ErrNoPlace) || !strings.Contains(err.Error(), "node rank 5 is out of range: round") {
			t.Errorf("rank 5 of 2: %v", err)
		}
		r0.Finish(ctx)
		r1.Finish(ctx)
		r0.Close()
		r1.Close()
	})
}

// threeNodes forms a round of three members and returns them by rank.
func threeNodes(t *testing.T, k kind, conf map[string]string) []*rendezvous.Round {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	lead := k.newMember(t, conf)
	a := join(ctx, k.newMember(t, conf), rendezvous.Member{Rank: 1, Host: "10.0.0.2"}, 0)
	b := join(ctx, k.newMember(t, conf), rendezvous.Member{Rank: 2, Host: "10.0.0.3"}, 0)
	r0, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 3, NProc: 1}, rendezvous.Member{Rank: 0, Host: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return []*rendezvous.Round{r0, must(t, <-a), must(t, <-b)}
}

func nextEvent(t *testing.T, ch <-chan rendezvous.Event, within time.Duration) (rendezvous.Event, bool) {
	t.Helper()
	select {
	case e, ok := <-ch:
		return e, ok
	case <-time.After(within):
		return rendezvous.Event{}, false
	}
}

func TestFailureReachesEveryMember(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		rs := threeNodes(t, k, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ev0, ev2 := rs[0].Events(ctx), rs[2].Events(ctx)
		if err := rs[1].Fail(ctx, "rank 1 panicked: boom"); err != nil {
			t.Fatal(err)
		}
		for i, ch := range []<-chan rendezvous.Event{ev0, ev2} {
			e, ok := nextEvent(t, ch, patience)
			if !ok || e.Kind != rendezvous.NodeFailed || e.Node.Rank != 1 || e.Node.Host != "10.0.0.2" || e.Reason != "rank 1 panicked: boom" {
				t.Errorf("watcher %d: %+v (ok %v)", i, e, ok)
			}
		}
		for _, r := range rs {
			r.Close()
		}
	})
}

// A member that finished may leave at once; one that leaves without
// finishing is reported.
func TestFinishedMembersLeaveQuietly(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		rs := threeNodes(t, k, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ev0 := rs[0].Events(ctx)
		if err := rs[2].Finish(ctx); err != nil {
			t.Fatal(err)
		}
		rs[2].Close()
		// A negative check: a second catches most wrong reports and cannot
		// fail a correct backend.
		if e, ok := nextEvent(t, ev0, time.Second); ok {
			t.Fatalf("a finished member's departure was reported: %+v", e)
		}
		rs[1].Close() // without Finish
		e, ok := nextEvent(t, ev0, patience)
		if !ok || e.Node.Rank != 1 || !strings.Contains(e.Reason, "left the round without finishing") {
			t.Errorf("leaving without finishing: %+v (ok %v)", e, ok)
		}
		rs[0].Close()
	})
}

func TestNewRoundSupersedesAndMembersRejoin(t *testing.T) {
	forEachKind(t, func(t *testing.T, k kind) {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		lead, agent := k.newMember(t, nil), k.newMember(t, nil)
		a := join(ctx, agent, rendezvous.Member{Rank: 1, Agent: true}, 0)
		r0, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 2, NProc: 1}, rendezvous.Member{Rank: 0})
		if err != nil {
			t.Fatal(err)
		}
		r1 := must(t, <-a)
		ev1 := r1.Events(ctx)
		// The leader gives up on the round (a failure) and opens the next:
		// the member is told, and joins the next round.
		r0.Fail(ctx, "restarting")
		r0.Close()
		a = join(ctx, agent, rendezvous.Member{Rank: 1, Agent: true}, r1.ID)
		r0b, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 2, NProc: 1}, rendezvous.Member{Rank: 0})
		if err != nil {
			t.Fatal(err)
		}
		r1b := must(t, <-a)
		if r1b.ID != r0b.ID || r0b.ID <= r0.ID {
			t.Errorf("round ids: first %d, second %d / %d", r0.ID, r0b.ID, r1b.ID)
		}
		e, ok := nextEvent(t, ev1, patience)
		if !ok || (e.Kind != rendezvous.Superseded && e.Kind != rendezvous.NodeFailed) {
			t.Errorf("member of the old round: %+v (ok %v)", e, ok)
		}
		r0b.Finish(ctx)
		r1b.Finish(ctx)
		r1.Close()
		r0b.Close()
		r1b.Close()
	})
}

// A member that waits for "a round after the last one it joined" joins the
// next launch's round although that launch brought a new store or a new
// embedded etcd (whose counters start again).
func TestJoinAfterTheStoreWasReplaced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	round := func(lead, member rendezvous.Backend, after int64) (*rendezvous.Round, *rendezvous.Round) {
		t.Helper()
		a := join(ctx, member, rendezvous.Member{Rank: 1, Agent: true}, after)
		r0, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 2, NProc: 1}, rendezvous.Member{Rank: 0})
		if err != nil {
			t.Fatal(err)
		}
		r1 := must(t, <-a)
		r0.Finish(ctx)
		r1.Finish(ctx)
		r0.Close()
		r1.Close()
		return r0, r1
	}
	t.Run("static", func(t *testing.T) {
		ep := freeAddr(t)
		cfg := rendezvous.Config{Backend: "static", Endpoint: ep, RunID: "r", Secret: "shared-secret", Logger: quietLog()}
		member, _ := rendezvous.New(cfg)
		defer member.Close()
		hostCfg := cfg
		hostCfg.HostStore = true
		lead, err := rendezvous.New(hostCfg)
		if err != nil {
			t.Fatal(err)
		}
		_, first := round(lead, member, 0)
		lead.Close() // the launch ends, its store with it
		if lead, err = rendezvous.New(hostCfg); err != nil {
			t.Fatal(err)
		}
		defer lead.Close()
		_, second := round(lead, member, first.ID)
		if second.ID <= first.ID {
			t.Errorf("round ids %d then %d", first.ID, second.ID)
		}
	})
	t.Run("etcd", func(t *testing.T) {
		_, port, _ := net.SplitHostPort(freeAddr(t))
		emb, err := rendezvous.StartEmbedded(ctx, "127.0.0.1", port, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		cfg := rendezvous.Config{Backend: "etcd", Endpoint: emb.Endpoint(), RunID: "r", Logger: quietLog()}
		member, _ := rendezvous.New(cfg)
		defer member.Close()
		lead, _ := rendezvous.New(cfg)
		_, first := round(lead, member, 0)
		lead.Close()
		emb.Close()
		if emb, err = rendezvous.StartEmbedded(ctx, "127.0.0.1", port, quietLog()); err != nil {
			t.Fatal(err)
		}
		defer emb.Close()
		lead, _ = rendezvous.New(cfg)
		defer lead.Close()
		round(lead, member, first.ID)
	})
}
