package inspect

import (
	"fmt"
	"strings"
)

// State is where an item is in its queue.
type State string

// The states of an item.
const (
	// Delayed: offered with a delay (or for a due time), not yet due.
	Delayed State = "delayed"
	// Retry: a failed delivery (Nack, a handler error, an item that could
	// not be decoded) waiting for its next attempt.
	Retry State = "retry"
	// Ready: due, waiting to be taken or received.
	Ready State = "ready"
	// Inflight: received and not yet settled (leased), or being handed to
	// a consumer between its wait and its lease (claimed).
	Inflight State = "inflight"
	// Dead: a dead letter, out of attempts or dead-lettered by a handler.
	Dead State = "dead"
)

// States returns every state, in the order an item usually goes through
// them. A new slice on every call.
func States() []State { return []State{Delayed, Retry, Ready, Inflight, Dead} }

// ParseState returns the state named s, ignoring case and surrounding
// spaces ("Dead", " ready "). Any other name returns an error wrapping
// [ErrInvalidArgument] that lists the valid ones.
func ParseState(s string) (State, error) {
	st := State(strings.ToLower(strings.TrimSpace(s)))
	if err := st.check(); err != nil {
		return "", err
	}
	return st, nil
}

// check returns an error wrapping ErrInvalidArgument when s is not a state.
func (s State) check() error {
	for _, v := range States() {
		if s == v {
			return nil
		}
	}
	names := make([]string, 0, 5)
	for _, v := range States() {
		names = append(names, string(v))
	}
	return fmt.Errorf("unknown state %q (valid: %s): %w", string(s), strings.Join(names, ", "), ErrInvalidArgument)
}
