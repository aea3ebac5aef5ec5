package rendezvous_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/goaccel/goaccel/launcher/rendezvous"
)

func newEtcdMember(t *testing.T, endpoint string, conf map[string]string) rendezvous.Backend {
	t.Helper()
	b, err := rendezvous.New(rendezvous.Config{Backend: "etcd", Endpoint: endpoint, RunID: "run1", Conf: conf, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

const memberEnv = "GOACCEL_RENDEZVOUS_TEST_MEMBER" // endpoint: play a member process

func TestMain(m *testing.M) {
	if ep := os.Getenv(memberEnv); ep != "" {
		os.Exit(memberProcess(ep))
	}
	os.Exit(m.Run())
}

// memberProcess joins a round as node 1 and waits to be killed. Its
// lease_ttl is short, for the test to see it expire soon after the kill, but
// not so short that a busy machine lets it expire before.
func memberProcess(endpoint string) int {
	b, err := rendezvous.New(rendezvous.Config{Backend: "etcd", Endpoint: endpoint, RunID: "run1",
		Conf: map[string]string{"lease_ttl": "5"}, Logger: quietLog()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := b.Join(context.Background(), rendezvous.Member{Rank: 1, Host: "10.0.0.2", Agent: true}, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("joined")
	time.Sleep(time.Hour) // until killed
	return 0
}

// A node whose process dies (killed with SIGKILL: no revoke, no finish,
// the keep-alives just stop) is reported by name once its lease expires.
func TestExpiredLeaseNamesTheDeadNode(t *testing.T) {
	emb := startEmbedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	lead := newEtcdMember(t, emb.Endpoint(), nil)
	exe, _ := os.Executable()
	member := exec.Command(exe)
	member.Env = append(os.Environ(), memberEnv+"="+emb.Endpoint())
	member.Stderr = os.Stderr
	out, _ := member.StdoutPipe()
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { member.Process.Kill(); member.Wait() }()
	r0, err := lead.Lead(ctx, rendezvous.Spec{NumNodes: 2, NProc: 2}, rendezvous.Member{Rank: 0, Host: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "joined\n" {
		t.Fatalf("member said %q", line)
	}
	events := r0.Events(ctx)
	member.Process.Kill()
	start := time.Now()
	e, ok := nextEvent(t, events, patience)
	if !ok || e.Kind != rendezvous.NodeLost || e.Node.Rank != 1 || e.Node.Host != "10.0.0.2" {
		t.Fatalf("event %+v (ok %v)", e, ok)
	}
	if got := e.String(); got != "node 1 (10.0.0.2): its rendezvous lease expired: no keep-alive within its lease_ttl (5s); the node died or is cut off" {
		t.Errorf("event text %q", got)
	}
	t.Logf("lost after %s (lease_ttl 5 s)", time.Since(start))
	r0.Close()
}

func TestEmbeddedRemovesItsDataAndNamesABusyPort(t *testing.T) {
	emb := startEmbedded(t)
	dir := emb.Dir()
	if _, err := os.Stat(filepath.Join(dir, "member")); err != nil {
		t.Fatalf("no data in %s: %v", dir, err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0") // another process's port
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, port, _ := net.SplitHostPort(busy.Addr().String())
	_, err = rendezvous.StartEmbedded(context.Background(), "127.0.0.1", port, quietLog())
	if err == nil || !strings.Contains(err.Error(), "port "+port+" is already in use") {
		t.Errorf("etcd on a busy port: %v", err)
	}
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data dir %s still there: %v", dir, err)
	}
}

func TestEtcdConfErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "x.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, c := range []struct {
		conf map[string]string
		want string
	}{
		{map[string]string{"protocol": "ftp"}, `protocol "ftp": choose between http and https`},
		{map[string]string{"cert": "/c.pem"}, "needs both cert and key"},
		{map[string]string{"protocol": "http", "cacert": notPEM}, `protocol "http" contradicts cacert/cert`},
		{map[string]string{"cacert": filepath.Join(dir, "missing.pem")}, "rdzv_conf cacert: open"},
		{map[string]string{"cacert": notPEM}, "holds no PEM certificate"},
		{map[string]string{"user": "root"}, "needs both user and password"},
		{map[string]string{"user": "root", "password": "a", "password_file": notPEM}, "both password and password_file"},
		{map[string]string{"lease_ttl": "-1"}, `lease_ttl "-1" is not a positive number of seconds`},
		{map[string]string{"join_timeout": "soon"}, `join_timeout "soon" is not a positive number`},
	} {
		_, err := rendezvous.New(rendezvous.Config{Backend: "etcd", Endpoint: "127.0.0.1:2379", RunID: "r", Conf: c.conf, Logger: quietLog()})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.conf, err, c.want)
		}
	}
	if _, err := rendezvous.New(rendezvous.Config{Backend: "etcd", Endpoint: "http://127.0.0.1:1", RunID: "r", Conf: map[string]string{"cacert": notPEM}}); err == nil {
		t.Error("http:// endpoint with TLS settings accepted")
	}
	if _, err := rendezvous.New(rendezvous.Config{Backend: "static", Endpoint: "127.0.0.1:1", RunID: "r"}); err == nil ||
		!strings.Contains(err.Error(), `RdzvConf "secret_file"`) {
		t.Errorf("static without a secret: %v", err)
	}
	if _, err := rendezvous.New(rendezvous.Config{Backend: "zookeeper", Endpoint: "x:1", RunID: "r"}); err == nil ||
		!strings.Contains(err.Error(), "choose between 'static', 'c10d' and 'etcd'") {
		t.Errorf("unknown backend: %v", err)
	}
}

// With a wrong secret the store refuses the node, and says why.
func TestStoreRefusesAnotherSecret(t *testing.T) {
	ep := freeAddr(t)
	host, err := rendezvous.New(rendezvous.Config{Backend: "static", Endpoint: ep, RunID: "r", Secret: "right", HostStore: true, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	other, _ := rendezvous.New(rendezvous.Config{Backend: "static", Endpoint: ep, RunID: "r", Secret: "wrong", Logger: quietLog()})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, err = other.Join(ctx, rendezvous.Member{Rank: 1}, 0)
	if err == nil || !strings.Contains(err.Error(), "refused this node") || !strings.Contains(err.Error(), "secret_file the same file") {
		t.Errorf("wrong secret: %v", err)
	}
}

func TestEtcdUserAndPassword(t *testing.T) {
	emb := startEmbedded(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{emb.Endpoint()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	cli.Close()
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("rootpw\n"), 0o600)
	b := newEtcdMember(t, emb.Endpoint(), map[string]string{"user": "root", "password_file": pwFile})
	r, err := b.Lead(ctx, rendezvous.Spec{NumNodes: 1, NProc: 1}, rendezvous.Member{Rank: 0})
	if err != nil {
		t.Fatalf("with the right password: %v", err)
	}
	r.Finish(ctx)
	r.Close()
	_, err = rendezvous.New(rendezvous.Config{Backend: "etcd", Endpoint: emb.Endpoint(), RunID: "run1",
		Conf: map[string]string{"user": "root", "password": "nope"}, Logger: quietLog()})
	if err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Errorf("wrong password: %v", err)
	}
	noAuth := newEtcdMember(t, emb.Endpoint(), nil)
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	defer scancel()
	if _, err := noAuth.Lead(sctx, rendezvous.Spec{NumNodes: 1, NProc: 1}, rendezvous.Member{Rank: 0}); err == nil {
		t.Error("an anonymous client opened a round on an etcd with auth")
	}
}

// TLS with client certificates: cacert, cert and key reach etcd; without
// a client certificate etcd refuses the node.
func TestEtcdClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", ca, caKey)
	newCert(t, dir, "client", ca, caKey)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	_, peerPort, _ := net.SplitHostPort(freeAddr(t))
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "data")
	cu := url.URL{Scheme: "https", Host: "127.0.0.1:" + port}
	pu := url.URL{Scheme: "http", Host: "127.0.0.1:" + peerPort}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.ClientTLSInfo.CertFile = filepath.Join(dir, "server.pem")
	cfg.ClientTLSInfo.KeyFile = filepath.Join(dir, "server-key.pem")
	cfg.ClientTLSInfo.TrustedCAFile = filepath.Join(dir, "ca.pem")
	cfg.ClientTLSInfo.ClientCertAuth = true
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	<-e.Server.ReadyNotify()

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	conf := map[string]string{
		"cacert": filepath.Join(dir, "ca.pem"),
		"cert":   filepath.Join(dir, "client.pem"), "key": filepath.Join(dir, "client-key.pem"),
	}
	b := newEtcdMember(t, cu.Host, conf)
	r, err := b.Lead(ctx, rendezvous.Spec{NumNodes: 1, NProc: 1}, rendezvous.Member{Rank: 0})
	if err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	r.Finish(ctx)
	r.Close()
	noCert := newEtcdMember(t, cu.Host, map[string]string{"cacert": conf["cacert"]})
	sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
	defer scancel()
	if _, err := noCert.Lead(sctx, rendezvous.Spec{NumNodes: 1, NProc: 1}, rendezvous.Member{Rank: 0}); err == nil {
		t.Error("a node without a client certificate opened a round")
	}
}

// newCert writes name.pem and name-key.pem, signed by parent (self-signed
// CA when parent is nil), valid for 127.0.0.1.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, name+"-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

// A member of this process still stopping (clients watching make etcd wait)
// does not make the next one on its address fail: the next one waits.
func TestEmbeddedWaitsForThePreviousOnItsAddress(t *testing.T) {
	emb := startEmbedded(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{emb.Endpoint()}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	cli.Watch(wctx, "/some/key") // an open stream: etcd gives it up to 7 s
	if _, err := cli.Put(context.Background(), "/x", "y"); err != nil {
		t.Fatal(err)
	}
	dir := emb.Dir()
	_, port, _ := net.SplitHostPort(emb.Endpoint())
	start := time.Now()
	go emb.Close()
	next, err := rendezvous.StartEmbedded(context.Background(), "127.0.0.1", port, quietLog())
	if err != nil {
		t.Fatalf("the next member on port %s: %v", port, err)
	}
	t.Logf("the next member started %s after the first was told to close", time.Since(start))
	next.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the first member's data %s is still there: %v", dir, err)
	}
}

// Data left by the embedded etcd of a process that died is removed by the
// next one.
func TestEmbeddedRemovesOrphanedData(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(os.TempDir(), fmt.Sprintf("goaccel-etcd-%d-123", dead.Process.Pid))
	alive := filepath.Join(os.TempDir(), fmt.Sprintf("goaccel-etcd-%d-456", os.Getppid()))
	for _, d := range []string{orphan, alive} {
		if err := os.MkdirAll(filepath.Join(d, "member"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	emb := startEmbedded(t)
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("orphaned data %s still there", orphan)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("the data of a live process was removed: %v", err)
	}
	if !strings.HasPrefix(filepath.Base(emb.Dir()), fmt.Sprintf("goaccel-etcd-%d-", os.Getpid())) {
		t.Errorf("data dir %s does not name this process", emb.Dir())
	}
}
