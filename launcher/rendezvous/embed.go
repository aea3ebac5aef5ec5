package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
)

// embeddedStartTimeout bounds the start of an embedded etcd member.
const embeddedStartTimeout = 30 * time.Second

// Embedded is a one-member etcd cluster running in this process, for a
// launch that names no etcd endpoint: clients reach it at host:port, its
// data lives in a temporary directory that Close removes. It has neither TLS
// nor auth: anyone who can reach host:port while it runs can read the
// launch's rendezvous (see the package documentation).
type Embedded struct {
	etcd     *embed.Etcd
	dir      string
	endpoint string

	once    sync.Once
	err     error
	stopped chan struct{}
}

// running holds the client addresses of the embedded members of this
// process until they have stopped, so that a new member on the same
// address waits for the port instead of failing: an interrupted cell
// returns before its launch has stopped its etcd, which etcd may take a
// while to do (it gives clients' open streams up to its request timeout,
// 7 s). It tracks a resource of the process (bound ports), hence
// process-wide.
var running sync.Map // host:port → chan struct{}, closed when stopped

// portWait bounds how long StartEmbedded waits for a member of this process
// on the same address to stop.
const portWait = 15 * time.Second

// StartEmbedded starts an etcd member serving clients at host:port (host
// may be a name; it is resolved to the address to listen on) and returns
// once it is ready. Its peer port, which nothing else uses, is a free port
// of the loopback interface.
func StartEmbedded(ctx context.Context, host, port string, log logrus.FieldLogger) (*Embedded, error) {
	if log == nil {
		log = logrus.StandardLogger()
	}
	ip, err := listenIP(host)
	if err != nil {
		return nil, err
	}
	removeOrphanedData()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dataPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("rendezvous: embedded etcd data directory: %w", err)
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort(ip, port)}
	if ch, ok := running.Load(clientURL.Host); ok {
		// A member of an earlier launch in this process, still stopping
		// (an interrupted cell may return before its launch has cleaned up).
		select {
		case <-ch.(chan struct{}):
		case <-time.After(portWait):
		case <-ctx.Done():
			return nil, fmt.Errorf("rendezvous: waiting for the previous embedded etcd at %s to stop: %w", clientURL.Host, ctx.Err())
		}
	}
	peerPort, err := freeLoopbackPort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", peerPort)}
	cfg := embed.NewConfig()
	cfg.Name = "goaccel"
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	cfg.InitialClusterToken = "goaccel-" + strings.TrimPrefix(dir, os.TempDir())
	cfg.UnsafeNoFsync = true // the data dies with the launch
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapLogger(log, zapcore.WarnLevel))
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("rendezvous: cannot start the embedded etcd at %s: port %s is already in use (another launch or process holds it); choose another UsePort or name an etcd in RdzvEndpoint: %w", clientURL.Host, port, err)
		}
		return nil, fmt.Errorf("rendezvous: cannot start the embedded etcd at %s: %w", clientURL.Host, err)
	}
	emb := &Embedded{etcd: e, dir: dir, endpoint: clientURL.Host, stopped: make(chan struct{})}
	running.Store(emb.endpoint, emb.stopped)
	select {
	case <-e.Server.ReadyNotify():
		log.Infof("rendezvous: embedded etcd ready at %s (data in %s)", emb.endpoint, dir)
		return emb, nil
	case err := <-e.Err():
		emb.Close()
		return nil, fmt.Errorf("rendezvous: the embedded etcd at %s failed: %w", clientURL.Host, err)
	case <-ctx.Done():
		emb.Close()
		return nil, fmt.Errorf("rendezvous: starting the embedded etcd: %w", ctx.Err())
	case <-time.After(embeddedStartTimeout):
		emb.Close()
		return nil, fmt.Errorf("rendezvous: the embedded etcd at %s was not ready within %s", clientURL.Host, embeddedStartTimeout)
	}
}

// Endpoint is host:port of the member's client URL.
func (e *Embedded) Endpoint() string { return e.endpoint }

// Dir is the member's data directory (removed by Close).
func (e *Embedded) Dir() string { return e.dir }

// Close stops the member and removes its data. It may be called more
// than once.
func (e *Embedded) Close() error {
	e.once.Do(func() {
		defer func() {
			running.CompareAndDelete(e.endpoint, e.stopped)
			close(e.stopped)
		}()
		e.etcd.Close()
		if err := os.RemoveAll(e.dir); err != nil {
			e.err = fmt.Errorf("rendezvous: removing the embedded etcd's data: %w", err)
		}
	})
	return e.err
}

// listenIP resolves host to an address etcd can listen on.
func listenIP(host string) (string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return host, nil
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return "", fmt.Errorf("rendezvous: cannot resolve MasterAddr %q for the embedded etcd: %v", host, err)
	}
	for _, ip := range ips {
		if ip.To4() != nil {
			return ip.String(), nil
		}
	}
	return ips[0].String(), nil
}

func freeLoopbackPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("rendezvous: finding a free loopback port for the embedded etcd: %w", err)
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p, nil
}

// dataPrefix names the data directories of embedded members in the
// temporary directory: goaccel-etcd-<pid>-<random>.
const dataPrefix = "goaccel-etcd-"

// removeOrphanedData removes the data directories that embedded members of
// processes that no longer exist left behind (a kernel killed during a
// launch cannot remove its own).
func removeOrphanedData() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dataPrefix+"*-*"))
	for _, d := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), dataPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}
