// log/slog: text and JSON handlers (timestamps removed so the output is
// stable), attributes, groups and levels.
package main

import (
	"log/slog"
	"os"
)

func noTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}

func main() {
	text := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	text.Info("starting", "port", 8080, "debug", false)
	text.Debug("hidden at the default level")
	text.Warn("disk almost full", slog.Int("percent", 93))

	js := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: noTime}))
	js.Debug("shown now")
	req := js.With("request_id", "r-17").WithGroup("http")
	req.Error("failed", "status", 502, slog.Group("peer", "ip", "10.0.0.2"))

	slog.SetDefault(text)
	slog.Info("through the default logger", "n", 3)
}
