package dashboard

import (
	"errors"
	"fmt"
	"log/slog"

	iqueue "github.com/redelay/redelay/internal/queue"
)

// Option configures the dashboard at [New].
type Option func(*config)

// config is what the options set.
type config struct {
	readOnly bool
	logger   *slog.Logger
	title    string
	secret   []byte
	prefix   string // "": the default key prefix
	err      error  // a bad option: every request answers 500
}

// MinSecretLen is the shortest key [WithSecret] accepts, in bytes.
const MinSecretLen = 32

// defaultTitle is the page title without WithTitle.
const defaultTitle = "redelay"

func (c *config) fail(err error) {
	c.err = errors.Join(c.err, err)
}

// ReadOnly makes the dashboard show queues and items without changing
// them: no action button or form is rendered, and every POST is refused
// with 403 Forbidden, whatever its token. Default: actions are shown and
// allowed (to requests with a valid token).
func ReadOnly() Option {
	return func(c *config) { c.readOnly = true }
}

// WithLogger sets where the dashboard logs: each action taken (at info,
// with the queue and item), and each Redis error (at error). Default:
// nothing is logged. A nil logger is a bad option.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.fail(errors.New("WithLogger(nil)"))
			return
		}
		c.logger = l
	}
}

// WithTitle sets the name shown in the pages' title and header. Default:
// "redelay". An empty title restores the default.
func WithTitle(title string) Option {
	return func(c *config) {
		if title == "" {
			title = defaultTitle
		}
		c.title = title
	}
}

// WithPrefix shows only the queues whose keys start with prefix, the one
// their processes gave blocking.WithPrefix. Default: "redelay". A prefix
// that is empty or holds braces or whitespace is a bad option.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if err := iqueue.CheckPrefix(prefix); err != nil {
			c.fail(fmt.Errorf("WithPrefix: %w", err))
			return
		}
		c.prefix = prefix
	}
}

// WithSecret sets the key that signs the anti-forgery tokens and the flash
// messages, at least [MinSecretLen] bytes. Default: a random key made at
// [New], so that a token is valid only at the handler that issued it. Give
// every replica of an application behind a load balancer the same key, so
// that a form served by one is accepted by the others. The key is copied.
// A shorter key is a bad option.
func WithSecret(key []byte) Option {
	return func(c *config) {
		if len(key) < MinSecretLen {
			c.fail(fmt.Errorf("WithSecret: key of %d bytes, at least %d", len(key), MinSecretLen))
			return
		}
		c.secret = append([]byte(nil), key...)
	}
}
