package gonb

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// Environment variables GoNB sets for cells and shell commands.
const (
	EnvDir         = protocol.GONB_DIR_ENV
	EnvTmpDir      = protocol.GONB_TMP_DIR_ENV
	EnvJupyterRoot = protocol.GONB_JUPYTER_ROOT_ENV
	EnvKernelID    = protocol.GONB_JUPYTER_KERNEL_ID_ENV
	EnvWasmDir     = protocol.GONB_WASM_DIR_ENV
	EnvWasmURL     = protocol.GONB_WASM_URL_ENV
	EnvVersion     = protocol.GONB_VERSION
)

// KernelID is the id Jupyter gave the kernel, read from its connection
// file's name (kernel-ID.json), or "" when the name does not say.
func KernelID(connectionFile string) string {
	base := filepath.Base(connectionFile)
	if !strings.HasPrefix(base, "kernel-") || !strings.HasSuffix(base, ".json") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(base, "kernel-"), ".json")
}

// JupyterRoot is the directory the Jupyter server serves files from, as
// GoNB finds it: the working directory of the process that started the
// kernel (JPY_PARENT_PID, which Jupyter sets). It returns "" when that
// cannot be read.
func JupyterRoot() string {
	pid, err := strconv.Atoi(os.Getenv("JPY_PARENT_PID"))
	if err != nil || pid <= 0 {
		return ""
	}
	dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return ""
	}
	return dir
}
