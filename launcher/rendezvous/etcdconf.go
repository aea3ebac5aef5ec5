package rendezvous

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/grpclog"
)

// EtcdClientConfig builds the etcd client configuration for endpoints
// (comma-separated host:port or http(s):// URLs) from RdzvConf, with the
// names torchelastic's etcd rendezvous uses where it has them:
//
//	protocol       "http" (default) or "https"
//	cacert         CA bundle (PEM) that signs the servers' certificates; implies https
//	cert, key      this node's client certificate and key (PEM), both or neither; imply https
//	user           etcd user name (etcd auth)
//	password       its password, or
//	password_file  a file holding it (preferred: RdzvConf is visible to workers)
//
// Files are read now, so a wrong path is reported before anything starts.
func EtcdClientConfig(endpoints string, conf map[string]string, log logrus.FieldLogger) (clientv3.Config, error) {
	var cfg clientv3.Config
	proto := strings.ToLower(strings.TrimSpace(conf["protocol"]))
	switch proto {
	case "", "http", "https":
	default:
		return cfg, fmt.Errorf("rendezvous: rdzv_conf protocol %q: choose between http and https", conf["protocol"])
	}
	cacert, cert, key := conf["cacert"], conf["cert"], conf["key"]
	if (cert == "") != (key == "") {
		return cfg, fmt.Errorf("rendezvous: rdzv_conf needs both cert and key (a client certificate and its private key), got only %s", map[bool]string{true: "cert", false: "key"}[cert != ""])
	}
	secure := proto == "https" || cacert != "" || cert != ""
	if proto == "http" && secure {
		return cfg, fmt.Errorf("rendezvous: rdzv_conf protocol \"http\" contradicts cacert/cert, which need https")
	}
	for _, ep := range strings.Split(endpoints, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		switch {
		case strings.HasPrefix(ep, "http://") && secure:
			return cfg, fmt.Errorf("rendezvous: etcd endpoint %q is http:// but rdzv_conf asks for TLS", ep)
		case strings.HasPrefix(ep, "https://"):
			secure = true
		case !strings.Contains(ep, "://"):
			if secure {
				ep = "https://" + ep
			} else {
				ep = "http://" + ep
			}
		case !strings.HasPrefix(ep, "http://"):
			return cfg, fmt.Errorf("rendezvous: etcd endpoint %q: want host:port, http:// or https://", ep)
		}
		cfg.Endpoints = append(cfg.Endpoints, ep)
	}
	if len(cfg.Endpoints) == 0 {
		return cfg, fmt.Errorf("rendezvous: no etcd endpoint in %q", endpoints)
	}
	if secure {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if cacert != "" {
			pem, err := os.ReadFile(cacert)
			if err != nil {
				return cfg, fmt.Errorf("rendezvous: rdzv_conf cacert: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return cfg, fmt.Errorf("rendezvous: rdzv_conf cacert %s holds no PEM certificate", cacert)
			}
			tc.RootCAs = pool
		}
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return cfg, fmt.Errorf("rendezvous: rdzv_conf cert/key: %w", err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		cfg.TLS = tc
	}
	user, pass := conf["user"], conf["password"]
	if pf := conf["password_file"]; pf != "" {
		if pass != "" {
			return cfg, fmt.Errorf("rendezvous: rdzv_conf has both password and password_file; keep one")
		}
		b, err := os.ReadFile(pf)
		if err != nil {
			return cfg, fmt.Errorf("rendezvous: rdzv_conf password_file: %w", err)
		}
		pass = strings.TrimRight(string(b), "\r\n")
	}
	if (user == "") != (pass == "") {
		return cfg, fmt.Errorf("rendezvous: etcd auth needs both user and password (or password_file)")
	}
	cfg.Username, cfg.Password = user, pass
	// gRPC backs off up to 2 minutes between reconnections by default; an
	// agent waiting for the embedded etcd of the next launch (down between
	// launches) must notice it within a second.
	cfg.DialOptions = []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
		MinConnectTimeout: 2 * time.Second,
	})}
	cfg.DialKeepAliveTime = 5 * time.Second
	cfg.DialKeepAliveTimeout = 5 * time.Second
	cfg.Logger = zapLogger(log, zapcore.WarnLevel)
	return cfg, nil
}

// zapLogger returns a zap logger that hands entries at or above lvl to log
// at debug level: etcd's own diagnostics belong in the kernel's log, never
// in a cell.
func zapLogger(log logrus.FieldLogger, lvl zapcore.Level) *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{
		MessageKey: "msg", LevelKey: "level", NameKey: "logger",
		EncodeLevel: zapcore.LowercaseLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder,
	})
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(debugWriter{log}), lvl))
}

// debugWriter logs every write as one debug entry.
type debugWriter struct{ log logrus.FieldLogger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.log.Debug(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// RouteGRPCLogs sends gRPC's own log (used by the etcd client and server)
// to log at debug level instead of the process's stderr, which the kernel
// shows in the running cell. Call it once, before any etcd client or
// server starts (gRPC requires it).
func RouteGRPCLogs(log logrus.FieldLogger) {
	w := debugWriter{log}
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, w, w))
}
