package redistest

import (
	"bytes"
	"log/slog"
	"sync"
)

// Logs is a goroutine-safe sink for a test's log records.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything logged so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// CaptureLogs returns a logger that writes every record, Debug and up, as
// text into the returned Logs.
func CaptureLogs() (*slog.Logger, *Logs) {
	l := &Logs{}
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})), l
}
