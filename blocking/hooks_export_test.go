package blocking

import "github.com/redelay/redelay/internal/queue"

// WithMaxEnvelopeVersion makes the queue read envelopes as a release that
// knows versions up to v would: tests of rolling upgrades use it to stand
// for a consumer older than its producers.
func WithMaxEnvelopeVersion(v int) Option {
	return func(o *options) { o.cfg.MaxEnvelopeVersion = v }
}

// BackoffOnError is backoffOnError, for tests.
var BackoffOnError = queue.BackoffOnError
