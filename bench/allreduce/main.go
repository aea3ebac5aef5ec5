// Command allreduce measures goaccel's process-group all-reduce bandwidth
// across real worker processes on loopback, beside a raw loopback TCP copy of
// the same bytes measured in the same run.
//
// It re-executes itself as the worker processes (like the launcher does),
// hosts the rendezvous store, and prints one table:
//
//	size        raw copy     np=2 algbw  ratio   np=4 algbw  ratio
//
// algbw is the all-reduce algorithm bandwidth, bytes/time, where bytes is the
// float32 buffer size; busbw (printed with -busbw) is algbw*2(n-1)/n, the
// bytes each rank actually moves. ratio is algbw over the raw copy's
// bandwidth (one process writing the same number of bytes to another over one
// loopback TCP connection, then waiting for a one-byte acknowledgement).
//
// With -netns, rank r runs in the network namespace given in place r (via
// `ip netns exec`), reached at the address given in place r of -hosts, and
// the program itself (which hosts the store) must run in the first one:
// bench/multinode/run.sh measures the all-reduce across two hosts made of
// namespaces this way, beside a raw copy over the same veth link.
//
// Usage:
//
//	go run ./bench/allreduce [-np 2,4] [-min 4KiB] [-max 256MiB] [-time 300ms]
//	allreduce -np 2 -netns NS1,NS2 -hosts 10.77.0.1,10.77.0.2
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/accelerate/pg"
)

const (
	envRole   = "GOACCEL_BENCH_ROLE" // "allreduce" or "raw"
	envRank   = "GOACCEL_BENCH_RANK"
	envWorld  = "GOACCEL_BENCH_WORLD"
	envStore  = "GOACCEL_BENCH_STORE"
	envSecret = "GOACCEL_BENCH_SECRET"
	envSizes  = "GOACCEL_BENCH_SIZES"
	envTime   = "GOACCEL_BENCH_TIME"
	envHost   = "GOACCEL_BENCH_HOST" // the address a rank listens on (raw copy)
)

// placement puts ranks in network namespaces: rank r in netns[r], at
// hosts[r]. Empty: every rank on loopback.
type placement struct{ netns, hosts []string }

func (p placement) storeHost() string {
	if len(p.hosts) > 0 {
		return p.hosts[0]
	}
	return "127.0.0.1"
}

// result is one measurement, printed as a JSON line by rank 0.
type result struct {
	Size  int     `json:"size"`
	Iters int     `json:"iters"`
	Sec   float64 `json:"sec"` // per iteration
}

func main() {
	if role := os.Getenv(envRole); role != "" {
		if err := worker(role); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	np := flag.String("np", "2,4", "comma-separated process counts")
	minS := flag.String("min", "4KiB", "smallest buffer")
	maxS := flag.String("max", "256MiB", "largest buffer")
	per := flag.Duration("time", 300*time.Millisecond, "target measuring time per size")
	busbw := flag.Bool("busbw", false, "also print bus bandwidth")
	netns := flag.String("netns", "", "comma-separated network namespaces, one per rank (run this program in the first)")
	hosts := flag.String("hosts", "", "comma-separated addresses of the ranks in their namespaces (with -netns)")
	flag.Parse()
	var pl placement
	if *netns != "" {
		pl = placement{strings.Split(*netns, ","), strings.Split(*hosts, ",")}
		if len(pl.hosts) != len(pl.netns) {
			fail(errors.New("-netns and -hosts need one entry per rank"))
		}
	}
	lo, err := parseSize(*minS)
	if err != nil {
		fail(err)
	}
	hi, err := parseSize(*maxS)
	if err != nil {
		fail(err)
	}
	var sizes []int
	for s := lo; s <= hi; s *= 4 {
		sizes = append(sizes, s)
	}
	var worlds []int
	for _, f := range strings.Split(*np, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			fail(fmt.Errorf("bad -np entry %q", f))
		}
		if len(pl.netns) > 0 && n > len(pl.netns) {
			fail(fmt.Errorf("-np %d but only %d namespaces", n, len(pl.netns)))
		}
		worlds = append(worlds, n)
	}
	sort.Ints(worlds)

	raw, err := launch(pl, "raw", 2, sizes, *per)
	if err != nil {
		fail(fmt.Errorf("raw copy: %w", err))
	}
	duplex, err := launch(pl, "duplex", 2, sizes, *per)
	if err != nil {
		fail(fmt.Errorf("raw copy both ways: %w", err))
	}
	ar := map[int]map[int]result{}
	for _, n := range worlds {
		if ar[n], err = launch(pl, "allreduce", n, sizes, *per); err != nil {
			fail(fmt.Errorf("np=%d: %w", n, err))
		}
	}

	sh := map[int]map[int]result{}
	for _, n := range worlds {
		if sh[n], err = launch(pl, "shard", n, sizes, *per); err != nil {
			fail(fmt.Errorf("np=%d reduce-scatter + all-gather: %w", n, err))
		}
	}

	where := "on loopback"
	if len(pl.netns) > 0 {
		where = "across network namespaces " + strings.Join(pl.netns, ", ") + " (one rank each, veth link via a bridge)"
	}
	fmt.Printf("all-reduce of float32 (sum) %s, GOMAXPROCS default, %d CPUs\n", where, numCPU())
	fmt.Printf("%-10s %12s", "size", "raw copy")
	for _, n := range worlds {
		fmt.Printf(" %12s %6s", fmt.Sprintf("np=%d algbw", n), "ratio")
		if *busbw {
			fmt.Printf(" %10s", "busbw")
		}
	}
	fmt.Println()
	for _, s := range sizes {
		rbw := float64(s) / raw[s].Sec
		fmt.Printf("%-10s %12s", fmtSize(s), fmtBW(rbw))
		for _, n := range worlds {
			bw := float64(s) / ar[n][s].Sec
			fmt.Printf(" %12s %6.2f", fmtBW(bw), bw/rbw)
			if *busbw {
				fmt.Printf(" %10s", fmtBW(bw*2*float64(n-1)/float64(n)))
			}
		}
		fmt.Println()
	}
	fmt.Printf("\nreduce-scatter + all-gather of the same float32 buffer (sharded training's two halves), beside all-reduce;\n" +
		"bound: the ring algorithms' bound (each rank sends 2(n-1)/n of the buffer at the raw copy's rate) over the time taken;\n" +
		"duplex: the same bound at the rate of a raw copy both ways at once (what a ring's links do; on few cores the two directions share them)\n")
	fmt.Printf("%-10s %14s", "size", "raw both ways")
	for _, n := range worlds {
		fmt.Printf(" %14s %6s %9s %9s %9s %9s", fmt.Sprintf("np=%d RS+AG", n), "vs AR", "AR bound", "RS+AG bnd", "AR dplx", "RS+AG dpx")
	}
	fmt.Println()
	for _, s := range sizes {
		rbw, dbw := float64(s)/raw[s].Sec, float64(s)/duplex[s].Sec
		fmt.Printf("%-10s %14s", fmtSize(s), fmtBW(dbw))
		for _, n := range worlds {
			bw := float64(s) / sh[n][s].Sec
			bound := 2 * float64(n-1) / float64(n) * float64(s) / rbw // seconds, for AR and for RS+AG alike
			dbound := 2 * float64(n-1) / float64(n) * float64(s) / dbw
			fmt.Printf(" %14s %6.2f %9.2f %9.2f %9.2f %9.2f", fmtBW(bw), bw/(float64(s)/ar[n][s].Sec), bound/ar[n][s].Sec, bound/sh[n][s].Sec,
				dbound/ar[n][s].Sec, dbound/sh[n][s].Sec)
		}
		fmt.Println()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "allreduce bench:", err)
	os.Exit(1)
}

func numCPU() int {
	n := 0
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n = strings.Count(string(b), "\nprocessor")
		if strings.HasPrefix(string(b), "processor") {
			n++
		}
	}
	return n
}

// launch hosts a store, starts n workers of the given role and collects rank
// 0's results.
func launch(pl placement, role string, n int, sizes []int, per time.Duration) (map[int]result, error) {
	secretBytes := make([]byte, 16)
	if _, err := rand.Read(secretBytes); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(secretBytes)
	st, err := pg.NewStore(net.JoinHostPort(pl.storeHost(), "0"), secret)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var serveWG sync.WaitGroup
	serveWG.Add(1)
	go func() { defer serveWG.Done(); _ = st.Serve(ctx) }()
	defer func() { cancel(); serveWG.Wait() }()

	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ss := make([]string, len(sizes))
	for i, s := range sizes {
		ss[i] = strconv.Itoa(s)
	}
	cmds := make([]*exec.Cmd, n)
	var out0 io.ReadCloser
	for r := range cmds {
		c := exec.CommandContext(ctx, exe)
		host := "127.0.0.1"
		if len(pl.netns) > 0 {
			c = exec.CommandContext(ctx, "ip", "netns", "exec", pl.netns[r], exe)
			host = pl.hosts[r]
		}
		c.Env = append(os.Environ(), envRole+"="+role, envRank+"="+strconv.Itoa(r), envWorld+"="+strconv.Itoa(n),
			envStore+"="+st.Addr(), envSecret+"="+secret, envSizes+"="+strings.Join(ss, ","), envTime+"="+per.String(),
			envHost+"="+host)
		c.Stderr = os.Stderr
		if r == 0 {
			if out0, err = c.StdoutPipe(); err != nil {
				return nil, err
			}
		}
		if err := c.Start(); err != nil {
			return nil, err
		}
		cmds[r] = c
	}
	res := map[int]result{}
	sc := bufio.NewScanner(out0)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("bad worker output %q: %w", sc.Text(), err)
		}
		res[r.Size] = r
	}
	var errs []error
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", r, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, s := range sizes {
		if _, ok := res[s]; !ok {
			return nil, fmt.Errorf("no result for size %d", s)
		}
	}
	return res, nil
}

// iterations picks a count every rank agrees on (from the size alone) that
// makes each size last roughly target at ~1 GB/s, within [3, 2000].
func iterations(size int, target time.Duration) int {
	it := int(target.Seconds() * 1e9 / float64(size))
	return min(max(it, 3), 2000)
}

func worker(role string) error {
	rank, _ := strconv.Atoi(os.Getenv(envRank))
	world, _ := strconv.Atoi(os.Getenv(envWorld))
	target, err := time.ParseDuration(os.Getenv(envTime))
	if err != nil {
		return err
	}
	var sizes []int
	for _, f := range strings.Split(os.Getenv(envSizes), ",") {
		s, err := strconv.Atoi(f)
		if err != nil {
			return err
		}
		sizes = append(sizes, s)
	}
	ctx := context.Background()
	g, err := pg.Join(ctx, pg.Config{Rank: rank, WorldSize: world, StoreAddr: os.Getenv(envStore), Secret: os.Getenv(envSecret), Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	defer g.Close()
	emit := func(size, iters int, d time.Duration) {
		if rank == 0 {
			b, _ := json.Marshal(result{Size: size, Iters: iters, Sec: d.Seconds() / float64(iters)})
			fmt.Println(string(b))
		}
	}
	switch role {
	case "allreduce":
		for _, size := range sizes {
			buf := make([]float32, size/4)
			for i := range buf {
				buf[i] = 1
			}
			if err := g.AllReduceFloat32(ctx, buf, pg.Sum); err != nil { // warm-up
				return err
			}
			if err := g.Barrier(ctx); err != nil {
				return err
			}
			it := iterations(size, target)
			start := time.Now()
			for i := 0; i < it; i++ {
				if err := g.AllReduceFloat32(ctx, buf, pg.Sum); err != nil {
					return err
				}
			}
			emit(size, it, time.Since(start))
		}
		return g.Barrier(ctx)
	case "shard":
		// Sharded training's traffic for one buffer, as accelerate/gomlx
		// makes it: reduce-scatter the flat gradients in place, all-gather
		// the shares into the same buffer.
		for _, size := range sizes {
			share := max(size/4/world, 1)
			buf := make([]float32, share*world)
			for i := range buf {
				buf[i] = 1
			}
			step := func() error {
				mine, err := g.ReduceScatterInPlaceFloat32(ctx, buf, pg.Sum)
				if err != nil {
					return err
				}
				return g.AllGatherFloat32(ctx, buf, mine)
			}
			if err := step(); err != nil { // warm-up
				return err
			}
			if err := g.Barrier(ctx); err != nil {
				return err
			}
			it := iterations(size, target)
			start := time.Now()
			for i := 0; i < it; i++ {
				if err := step(); err != nil {
					return err
				}
			}
			emit(size, it, time.Since(start))
		}
		return g.Barrier(ctx)
	case "raw", "duplex":
		return rawCopy(ctx, g, rank, sizes, target, role == "duplex", emit)
	}
	return fmt.Errorf("unknown role %q", role)
}

// rawCopy: rank 1 listens, rank 0 connects (the address travels through the
// group), then for every size rank 0 writes size bytes and rank 1 reads them
// and answers one byte; with both, each rank writes size bytes to the
// other while it reads the other's.
func rawCopy(ctx context.Context, g *pg.Group, rank int, sizes []int, target time.Duration, both bool, emit func(int, int, time.Duration)) error {
	var conn net.Conn
	if rank == 1 {
		ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv(envHost), "0"))
		if err != nil {
			return err
		}
		defer ln.Close()
		if _, err := g.BroadcastBytes(ctx, []byte(ln.Addr().String()), 1); err != nil {
			return err
		}
		if conn, err = ln.Accept(); err != nil {
			return err
		}
	} else {
		addr, err := g.BroadcastBytes(ctx, nil, 1)
		if err != nil {
			return err
		}
		if conn, err = net.Dial("tcp", string(addr)); err != nil {
			return err
		}
	}
	defer conn.Close()
	ack := make([]byte, 1)
	for _, size := range sizes {
		buf := make([]byte, size)
		var in []byte // the other direction's bytes (both)
		if both {
			in = make([]byte, size)
		}
		it := iterations(size, target)
		var start time.Time
		for i := -1; i < it; i++ { // i == -1 is the warm-up
			if i == 0 {
				start = time.Now()
			}
			if both {
				if err := exchangeBoth(conn, buf, in); err != nil {
					return err
				}
				continue
			}
			if rank == 0 {
				if _, err := conn.Write(buf); err != nil {
					return err
				}
				if _, err := io.ReadFull(conn, ack); err != nil {
					return err
				}
			} else {
				if _, err := io.ReadFull(conn, buf); err != nil {
					return err
				}
				if _, err := conn.Write(ack); err != nil {
					return err
				}
			}
		}
		emit(size, it, time.Since(start))
	}
	return nil
}

// exchangeBoth writes out to conn while it reads len(in) bytes from it.
func exchangeBoth(conn net.Conn, out, in []byte) error {
	done := make(chan error, 1)
	go func() {
		_, err := conn.Write(out)
		done <- err
	}()
	_, rerr := io.ReadFull(conn, in)
	if werr := <-done; werr != nil {
		return werr
	}
	return rerr
}

func parseSize(s string) (int, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, sfx := range []struct {
		s string
		m int
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(u, sfx.s) {
			u, mult = strings.TrimSuffix(u, sfx.s), sfx.m
			break
		}
	}
	v, err := strconv.Atoi(u)
	if err != nil || v*mult < 4 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return v * mult, nil
}

func fmtSize(s int) string {
	switch {
	case s >= 1<<30 && s%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", s>>30)
	case s >= 1<<20 && s%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", s>>20)
	case s >= 1<<10 && s%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", s>>10)
	}
	return fmt.Sprintf("%dB", s)
}

func fmtBW(bps float64) string { return fmt.Sprintf("%.2f GB/s", bps/1e9) }
