package dashboard

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redelay/redelay/inspect"
)

// errBadInput marks a request the dashboard refuses with 400 Bad Request:
// a missing or malformed parameter.
var errBadInput = errors.New("bad request")

// defaultLimit is how many items a queue's page lists without a limit.
const defaultLimit = 50

// queueParam returns the queue named by the parameter q.
func queueParam(v url.Values) (string, error) {
	q := v.Get("q")
	if q == "" {
		return "", fmt.Errorf("missing queue name (parameter q): %w", errBadInput)
	}
	return q, nil
}

// idParam returns the item ID given by the parameter id.
func idParam(v url.Values) (string, error) {
	id := v.Get("id")
	if id == "" {
		return "", fmt.Errorf("missing item ID (parameter id): %w", errBadInput)
	}
	return id, nil
}

// stateParam returns the state named by the parameter state; def when it
// is absent.
func stateParam(v url.Values, def inspect.State) (inspect.State, error) {
	s := v.Get("state")
	if s == "" {
		return def, nil
	}
	st, err := inspect.ParseState(s)
	if err != nil {
		return "", fmt.Errorf("parameter state: %w", err)
	}
	return st, nil
}

// intParam returns the integer parameter name, from lo to hi; def when it
// is absent.
func intParam(v url.Values, name string, def, lo, hi int) (int, error) {
	s := v.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("parameter %s: %q is not a whole number from %d to %d: %w", name, s, lo, hi, errBadInput)
	}
	return n, nil
}

// pageParams returns the offset and limit of a page of items: the
// parameters offset and limit, or page (from 1) and limit, page winning.
func pageParams(v url.Values) (offset, limit int, err error) {
	if limit, err = intParam(v, "limit", defaultLimit, 1, inspect.MaxPage); err != nil {
		return 0, 0, err
	}
	if v.Get("page") != "" {
		page, err := intParam(v, "page", 1, 1, inspect.MaxOffset/limit+1)
		if err != nil {
			return 0, 0, err
		}
		return (page - 1) * limit, limit, nil
	}
	if offset, err = intParam(v, "offset", 0, 0, inspect.MaxOffset); err != nil {
		return 0, 0, err
	}
	return offset, limit, nil
}

// readTarget reads what an action acts on from its URL's query: the
// queue is required; the page to return to is read leniently (a bad state
// or offset there only changes where the action returns).
func readTarget(v url.Values) (target, error) {
	q, err := queueParam(v)
	if err != nil {
		return target{}, err
	}
	t := target{Queue: q, From: fromQueue}
	switch f := v.Get("from"); f {
	case fromOverview, fromItem, fromSchedules:
		t.From = f
	}
	if st, err := stateParam(v, ""); err == nil {
		t.State = st
	}
	if off, lim, err := pageParams(v); err == nil {
		t.Offset, t.Limit = off, lim
	}
	t.Find = v.Get("find")
	t.Schedule = v.Get("schedule")
	t.Group = v.Get("group")
	return t, nil
}

// parseDue reads a new due time: a duration from now ("10m", "1h30m", "0s")
// or a time in RFC 3339 ("2026-01-02T15:04:05Z", fractions of a second
// allowed).
func parseDue(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("missing new due time: give a duration from now such as 10m, or an RFC 3339 time such as 2026-01-02T15:04:05Z: %w", errBadInput)
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("due time %q: a negative duration (promote runs an item now): %w", s, errBadInput)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("due time %q is neither a duration such as 10m nor an RFC 3339 time such as 2026-01-02T15:04:05Z: %w", s, errBadInput)
	}
	return t, nil
}
