package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSizes = []int{0, 1, 2, 3, 7, 1001, 4099, 100003, 300001}

// intData returns rank r's contribution: small integers (exact in float32
// sums), different on every rank.
func intData(r, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = float64((i*7+r*13)%101 - 50)
	}
	return d
}

func reference(world, n int, op ReduceOp) []float64 {
	out := intData(0, n)
	for r := 1; r < world; r++ {
		d := intData(r, n)
		for i := range out {
			switch op {
			case Sum, Mean:
				out[i] += d[i]
			case Max:
				out[i] = math.Max(out[i], d[i])
			case Min:
				out[i] = math.Min(out[i], d[i])
			}
		}
	}
	if op == Mean {
		for i := range out {
			out[i] /= float64(world)
		}
	}
	return out
}

func TestAllReduce(t *testing.T) {
	for _, world := range []int{2, 3, 4} {
		groups := joinAll(t, world)
		for _, n := range testSizes {
			for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
				want := reference(world, n, op)
				t.Run(fmt.Sprintf("world%d/n%d/%v/float64", world, n, op), func(t *testing.T) {
					got := make([][]float64, world)
					mustAll(t, onAll(groups, func(r int, g *Group) error {
						got[r] = intData(r, n)
						return g.AllReduceFloat64(context.Background(), got[r], op)
					}))
					for r := range got {
						for i := range want {
							if got[r][i] != want[i] {
								t.Fatalf("rank %d: [%d] = %v, want %v", r, i, got[r][i], want[i])
							}
						}
					}
				})
				t.Run(fmt.Sprintf("world%d/n%d/%v/float32", world, n, op), func(t *testing.T) {
					got := make([][]float32, world)
					mustAll(t, onAll(groups, func(r int, g *Group) error {
						d := intData(r, n)
						got[r] = make([]float32, n)
						for i, v := range d {
							got[r][i] = float32(v)
						}
						return g.AllReduceFloat32(context.Background(), got[r], op)
					}))
					for r := range got {
						for i := range want {
							if got[r][i] != float32(want[i]) {
								t.Fatalf("rank %d: [%d] = %v, want %v", r, i, got[r][i], float32(want[i]))
							}
						}
					}
				})
			}
		}
	}
}

// With inexact (random) values every rank must still end with identical bits.
func TestAllReduceBitwiseIdentical(t *testing.T) {
	const world = 3
	groups := joinAll(t, world)
	for _, n := range []int{5, 100003} {
		got := make([][]float32, world)
		mustAll(t, onAll(groups, func(r int, g *Group) error {
			rng := rand.New(rand.NewSource(int64(r)))
			got[r] = make([]float32, n)
			for i := range got[r] {
				got[r][i] = rng.Float32()
			}
			return g.AllReduceFloat32(context.Background(), got[r], Mean)
		}))
		for r := 1; r < world; r++ {
			for i := range got[0] {
				if math.Float32bits(got[r][i]) != math.Float32bits(got[0][i]) {
					t.Fatalf("n=%d: rank %d [%d] = %v, rank 0 has %v", n, r, i, got[r][i], got[0][i])
				}
			}
		}
	}
}

func TestReduceToRoot(t *testing.T) {
	const world = 3
	groups := joinAll(t, world)
	for _, n := range []int{0, 2, 1001, 300001} {
		for _, root := range []int{0, 2} {
			want := reference(world, n, Sum)
			got := make([][]float64, world)
			mustAll(t, onAll(groups, func(r int, g *Group) error {
				got[r] = intData(r, n)
				return g.ReduceFloat64(context.Background(), got[r], Sum, root)
			}))
			for r := range got {
				exp := want
				if r != root {
					exp = intData(r, n) // untouched
				}
				for i := range exp {
					if got[r][i] != exp[i] {
						t.Fatalf("n=%d root=%d rank %d: [%d] = %v, want %v", n, root, r, i, got[r][i], exp[i])
					}
				}
			}
			f32 := make([][]float32, world)
			mustAll(t, onAll(groups, func(r int, g *Group) error {
				f32[r] = make([]float32, n)
				for i, v := range intData(r, n) {
					f32[r][i] = float32(v)
				}
				return g.ReduceFloat32(context.Background(), f32[r], Max, root)
			}))
			wmax := reference(world, n, Max)
			for i := range wmax {
				if f32[root][i] != float32(wmax[i]) {
					t.Fatalf("float32 max n=%d root=%d: [%d] = %v, want %v", n, root, i, f32[root][i], wmax[i])
				}
			}
		}
	}
}

func TestBarrierBroadcastGather(t *testing.T) {
	for _, world := range []int{1, 2, 3, 5} {
		groups := joinAll(t, world)
		t.Run(fmt.Sprint("world", world), func(t *testing.T) {
			// Barrier: nobody leaves before the last rank arrives.
			var mu sync.Mutex
			arrived := 0
			mustAll(t, onAll(groups, func(r int, g *Group) error {
				time.Sleep(time.Duration(r) * 20 * time.Millisecond)
				mu.Lock()
				arrived++
				mu.Unlock()
				if err := g.Barrier(context.Background()); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				if arrived != world {
					return fmt.Errorf("left the barrier with %d of %d arrived", arrived, world)
				}
				return nil
			}))

			for _, size := range []int{0, 1, 1000, 3 << 20} {
				root := world - 1
				payload := bytes.Repeat([]byte{byte(size), 7, 9}, size/3+1)[:size]
				mustAll(t, onAll(groups, func(r int, g *Group) error {
					var in []byte
					if r == root {
						in = payload
					}
					out, err := g.BroadcastBytes(context.Background(), in, root)
					if err != nil {
						return err
					}
					if !bytes.Equal(out, payload) {
						return fmt.Errorf("broadcast of %d bytes: got %d bytes, different", size, len(out))
					}
					return nil
				}))
			}
			for _, n := range []int{0, 5, 400001} {
				src := intData(99, n)
				mustAll(t, onAll(groups, func(r int, g *Group) error {
					buf := make([]float64, n)
					buf32 := make([]float32, n)
					if r == 0 {
						copy(buf, src)
						for i, v := range src {
							buf32[i] = float32(v)
						}
					}
					if err := g.BroadcastFloat64(context.Background(), buf, 0); err != nil {
						return err
					}
					if err := g.BroadcastFloat32(context.Background(), buf32, 0); err != nil {
						return err
					}
					for i := range src {
						if buf[i] != src[i] || buf32[i] != float32(src[i]) {
							return fmt.Errorf("broadcast float n=%d: [%d] = %v/%v, want %v", n, i, buf[i], buf32[i], src[i])
						}
					}
					return nil
				}))
			}

			blob := func(r int) []byte { return bytes.Repeat([]byte{byte('a' + r)}, r*3) } // rank 0 sends nothing
			mustAll(t, onAll(groups, func(r int, g *Group) error {
				all, err := g.AllGather(context.Background(), blob(r))
				if err != nil {
					return err
				}
				gathered, err := g.Gather(context.Background(), blob(r), 0)
				if err != nil {
					return err
				}
				if r != 0 && gathered != nil {
					return fmt.Errorf("non-root got %d gathered entries", len(gathered))
				}
				if len(all) != world || (r == 0 && len(gathered) != world) {
					return fmt.Errorf("got %d/%d entries, want %d", len(all), len(gathered), world)
				}
				for j := range all {
					if !bytes.Equal(all[j], blob(j)) || (r == 0 && !bytes.Equal(gathered[j], blob(j))) {
						return fmt.Errorf("entry %d differs", j)
					}
				}
				return nil
			}))
		})
	}
}

func TestMissingRankNamed(t *testing.T) {
	st := startStore(t, testSecret)
	var err error
	promptly(t, "Join with a missing rank", func() {
		_, err = Join(context.Background(), Config{Rank: 0, WorldSize: 3, StoreAddr: st.Addr(), Secret: testSecret, Timeout: 500 * time.Millisecond, Logger: quietLogger()})
	})
	var me *MissingRanksError
	if !errors.As(err, &me) || fmt.Sprint(me.Ranks) != "[1 2]" {
		t.Fatalf("err = %v, want ranks [1 2] missing", err)
	}
	if !strings.Contains(err.Error(), "ranks [1 2] did not join within 500ms") {
		t.Fatalf("message %q", err)
	}
	// From a higher rank: rank 0 is missing.
	promptly(t, "Join with a missing rank 0", func() {
		_, err = Join(context.Background(), Config{Rank: 1, WorldSize: 2, StoreAddr: st.Addr(), Secret: testSecret, Timeout: 500 * time.Millisecond, Logger: quietLogger(), Namespace: "other"})
	})
	if err == nil || err.Error() != "pg: rank 0 did not join within 500ms" {
		t.Fatalf("err = %v", err)
	}
}

func TestStoreUnreachable(t *testing.T) {
	free, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", free)
	promptly(t, "Join without a store", func() {
		_, err = Join(context.Background(), Config{Rank: 0, WorldSize: 2, StoreAddr: addr, Secret: testSecret, Timeout: 300 * time.Millisecond, Logger: quietLogger()})
	})
	if err == nil || !strings.Contains(err.Error(), "could not reach the rendezvous store at "+addr) {
		t.Fatalf("err = %v", err)
	}
}

func TestSilentRankTimesOut(t *testing.T) {
	groups := joinAll(t, 2)
	groups[0].SetTimeout(500 * time.Millisecond)
	var err error
	promptly(t, "all_reduce with a silent rank", func() {
		err = groups[0].AllReduceFloat32(context.Background(), make([]float32, 10), Sum)
	})
	var re *RankError
	if !errors.As(err, &re) || re.Rank != 1 || re.Timeout != 500*time.Millisecond {
		t.Fatalf("err = %#v", err)
	}
	if err.Error() != "pg: rank 1 did not answer within 500ms during all_reduce" {
		t.Fatalf("message %q", err)
	}
	// The group is now broken, and says so.
	if err := groups[0].Barrier(context.Background()); err == nil || !strings.Contains(err.Error(), "unusable after an earlier failure") || !errors.As(err, &re) {
		t.Fatalf("Barrier after failure: %v", err)
	}
}

func TestDeadRankNamed(t *testing.T) {
	for _, n := range []int{10, 4 << 20} { // direct and ring paths
		groups := joinAll(t, 2)
		go func() {
			time.Sleep(30 * time.Millisecond) // rank 1 dies mid-collective
			groups[1].Close()
		}()
		errs := onAll(groups, func(r int, g *Group) error {
			buf := make([]float32, n)
			if r == 1 && n < 100 {
				time.Sleep(time.Second) // small: dies before sending
				return nil
			}
			for i := 0; i < 1000; i++ {
				if err := g.AllReduceFloat32(context.Background(), buf, Sum); err != nil {
					return err
				}
			}
			return errors.New("1000 all-reduces succeeded")
		})
		var re *RankError
		if !errors.As(errs[0], &re) || re.Rank != 1 || errs[0].Error() != "pg: rank 1 closed its connection during all_reduce" {
			t.Fatalf("n=%d: rank 0: %v", n, errs[0])
		}
	}
}

// The barrier would wait patience for rank 1; the cancellation ends it.
func TestCancelInterrupts(t *testing.T) {
	groups := joinAll(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var err error
	promptly(t, "cancelled barrier", func() { err = groups[0].Barrier(ctx) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCollectiveMismatch(t *testing.T) {
	groups := joinAll(t, 2)
	errs := onAll(groups, func(r int, g *Group) error {
		if r == 0 {
			return g.Barrier(context.Background())
		}
		return g.AllReduceFloat64(context.Background(), make([]float64, 4), Max)
	})
	for r, err := range errs {
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("rank %d: %v, want ErrMismatch", r, err)
		}
	}
	if !strings.Contains(errs[0].Error(), "rank 1 called all_reduce #2 (4 float64, max) while rank 0 called barrier #2") {
		t.Fatalf("message %q", errs[0])
	}

	groups = joinAll(t, 2)
	errs = onAll(groups, func(r int, g *Group) error {
		return g.AllReduceFloat32(context.Background(), make([]float32, 4+r), Sum)
	})
	if !errors.Is(errs[0], ErrMismatch) || !strings.Contains(errs[0].Error(), "matching lengths") {
		t.Fatalf("length mismatch: %v", errs[0])
	}
}

func TestCloseAndArgs(t *testing.T) {
	groups := joinAll(t, 2)
	if err := groups[0].Close(); err != nil {
		t.Fatal(err)
	}
	if err := groups[0].Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := groups[0].Barrier(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Barrier after Close: %v", err)
	}
	if _, err := groups[1].BroadcastBytes(context.Background(), nil, 2); err == nil {
		t.Fatal("root out of range accepted")
	}
	if err := groups[1].AllReduceFloat32(context.Background(), nil, ReduceOp(9)); err == nil {
		t.Fatal("invalid op accepted")
	}
	if _, err := Join(context.Background(), Config{Rank: 2, WorldSize: 2}); err == nil {
		t.Fatal("rank out of range accepted")
	}
	for s, want := range map[string]ReduceOp{"sum": Sum, "MEAN": Mean, "max": Max, " min": Min} {
		if op, err := ParseReduceOp(s); err != nil || op != want {
			t.Fatalf("ParseReduceOp(%q) = %v, %v", s, op, err)
		}
	}
	if _, err := ParseReduceOp("prod"); err == nil {
		t.Fatal("ParseReduceOp(prod) accepted")
	}
}

// c10d-style: every rank tries to host the store at the endpoint; exactly
// one does, and the group forms.
func TestHostStore(t *testing.T) {
	free, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", free)
	const world = 3
	groups := make([]*Group, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			groups[r], errs[r] = Join(context.Background(), Config{Rank: r, WorldSize: world, StoreAddr: addr, Secret: testSecret, HostStore: true, Timeout: patience, Logger: quietLogger()})
		}()
	}
	wg.Wait()
	mustAll(t, errs)
	defer func() {
		for _, g := range groups {
			g.Close()
		}
	}()
	mustAll(t, onAll(groups, func(r int, g *Group) error { return g.Barrier(context.Background()) }))
	// The hosting rank closed the store when Join returned: the port is free.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("store port still taken after Join: %v", err)
	}
	ln.Close()
}
