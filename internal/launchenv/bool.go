package launchenv

import (
	"fmt"
	"strings"
)

// StrToBool reads a flag variable as Accelerate's str_to_bool
// (utils/environment.py) does.
func StrToBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "y", "yes", "t", "true", "on", "1":
		return true, nil
	case "n", "no", "f", "false", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("invalid truth value %q", v)
}
