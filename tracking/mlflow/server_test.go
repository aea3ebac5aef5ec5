package mlflow

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/tracking/internal/pyvenv"
)

// mlflowServer is a real `mlflow server` started by a test.
type mlflowServer struct {
	t    *testing.T
	dir  string
	port int
	URI  string
	cmd  *exec.Cmd
	out  *bytes.Buffer
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer starts mlflow server with a sqlite store in dir on port and
// waits until /health answers.
func startServer(t *testing.T, dir string, port int) *mlflowServer {
	t.Helper()
	bin := pyvenv.Bin(t, "mlflow")
	s := &mlflowServer{t: t, dir: dir, port: port, URI: fmt.Sprintf("http://127.0.0.1:%d", port), out: &bytes.Buffer{}}
	s.cmd = exec.Command(bin, "server",
		"--backend-store-uri", "sqlite:///"+filepath.Join(dir, "mlflow.db"),
		"--default-artifact-root", filepath.Join(dir, "artifacts"),
		"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--workers", "1")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers share our process group id
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting mlflow server: %v", err)
	}
	t.Cleanup(s.stop)
	deadline := time.Now().Add(patience)
	for {
		resp, err := http.Get(s.URI + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mlflow server did not answer /health within %v:\n%s", patience, s.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freeze stops the server's process group (SIGSTOP): it takes connections
// and answers nothing until thaw.
func (s *mlflowServer) freeze() { _ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGSTOP) }

// thaw lets a frozen server go on (SIGCONT).
func (s *mlflowServer) thaw() { _ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT) }

// stop kills the server's process group (only processes this test started)
// and waits until the port is free.
func (s *mlflowServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(100 * time.Millisecond)
	}
}
