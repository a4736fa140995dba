package cli

import (
	"io"
	"log/slog"
)

// NewLogger is the commands' log: one JSON object per line on w (slog's
// JSON handler, each line escaped by [printableJSON]), records below level
// dropped. Run logs through it, serve at PGINBOX_LOG_LEVEL; the pginbox
// binary also makes it slog's default at warn level, so a warning a library
// logs through slog.Default or the log package (a GitHub App key file
// readable by others, found while the configuration is read) is a JSON
// line too (TestServeLogLinesAreJSON).
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(jsonLogWriter{w}, &slog.HandlerOptions{Level: level}))
}
