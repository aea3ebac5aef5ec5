//go:build !amd64 || !go1.26 || go1.27

package modreg

func promote() bool { return false }

func plugins() []string { return nil }
