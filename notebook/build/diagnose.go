package build

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// FetchError is the go command failing to find or download a module: the
// go command's words and what to do about them.
type FetchError struct {
	Module string // the module (or package) that was asked for
	Err    error  // the go command's error
	Hint   string // what to do ("" when there is nothing to add)
}

func (e *FetchError) Error() string {
	msg := fmt.Sprintf("cannot fetch %s: %s", e.Module, strings.TrimSpace(e.Err.Error()))
	if e.Hint != "" {
		msg += "\n" + e.Hint
	}
	return msg
}

func (e *FetchError) Unwrap() error { return e.Err }

// diagnose turns a go command error about fetching module mod into a
// *FetchError when it is one (errors it does not recognize stay as they
// are).
func diagnose(mod string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FetchError
	if errors.As(err, &fe) {
		return err
	}
	if hint, ok := fetchHint(mod, err.Error()); ok {
		return &FetchError{Module: mod, Err: err, Hint: hint}
	}
	return err
}

// fetchHint says what to do about a go command message on fetching mod;
// ok is false when the message is not about fetching.
func fetchHint(mod, msg string) (hint string, ok bool) {
	proxy := os.Getenv("GOPROXY")
	if proxy == "" {
		proxy = "https://proxy.golang.org,direct"
	}
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(msg, s) {
				return true
			}
		}
		return false
	}
	offline := fmt.Sprintf("download %s where there is network (go mod download %s@VERSION) into this machine's module cache, "+
		"or let the go command reach a module proxy (%%env GOPROXY=https://proxy.golang.org,direct)", mod, mod)
	switch {
	case has("GOPROXY=off", "GOFLAGS=-mod=vendor", "disabled by GOPROXY"):
		return "no network for modules: the Go module proxy is turned off (GOPROXY=off) and " + mod + " is not in the module cache; " + offline, true
	case has("dial tcp", "no such host", "connection refused", "network is unreachable", "i/o timeout", "TLS handshake timeout",
		"server misbehaving", "Temporary failure in name resolution", "connection reset", "no route to host"):
		return fmt.Sprintf("no network for modules: the module proxy (GOPROXY=%s) cannot be reached; %s", proxy, offline), true
	case has("SECURITY ERROR", "checksum mismatch", "verifying "+mod, "verifying module"):
		return "the module's checksum could not be verified against the checksum database (GOSUMDB); for a private module set GOPRIVATE or GONOSUMDB (%env GOPRIVATE=" + mod + ")", true
	case has("terminal prompts disabled", "could not read Username", "Permission denied (publickey)", "authentication required"):
		return "the module's repository needs credentials: for a private module set GOPRIVATE (%env GOPRIVATE=" + mod + ") and configure git's credentials for it", true
	case has("/@v/list") && has("403 Forbidden", "404 Not Found", "410 Gone"):
		return "the module proxy lists no versions of " + mod + ", so there is no latest version to take, and no module of the session's " +
			"module graph requires one: name a version the proxy serves, %go get " + modulePart(mod) + "@VERSION (the module path may be shorter than the import path), " +
			"then import it again", true
	case has("unknown revision", "invalid version", "no matching versions", "disallowed version string") ||
		(has(".info", ".mod:", ".zip") && has("404 Not Found", "410 Gone", "no such file or directory", "not found")):
		return "no such version of " + mod + ": list its versions with !go list -m -versions " + mod + ", then %go get " + mod + "@VERSION", true
	case has("404 Not Found", "410 Gone", "no such file or directory", "not found", "does not contain package", "cannot find module providing package", "malformed module path", "unrecognized import path"):
		return "no module provides it: check the import path (for a private module set GOPRIVATE; for a module on this machine use %use DIR)", true
	}
	return "", false
}
