package wandb

import (
	"os"
	"path/filepath"
)

// offlineEnv keeps wandb's tools off the network.
func offlineEnv(home string) []string {
	return append(os.Environ(),
		"WANDB_MODE=offline", "WANDB_SILENT=true", "WANDB_DISABLE_GIT=true",
		"WANDB_DISABLE_CODE=true", "WANDB_ERROR_REPORTING=false",
		"WANDB_CONFIG_DIR="+filepath.Join(home, "config"),
		"WANDB_CACHE_DIR="+filepath.Join(home, "cache"),
		"WANDB_DATA_DIR="+filepath.Join(home, "data"),
	)
}
