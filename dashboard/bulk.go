package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/redelay/redelay/inspect"
)

// bulkOps are the actions a queue's page applies to the items selected
// (form field op), with their past tense.
var bulkOps = map[string]string{
	actCancel:  "Cancelled",
	actPromote: "Promoted",
	actRequeue: "Requeued",
}

// bulkOp returns the inspector's call for the bulk action op.
func (h *handler) bulkOp(op string) (func(ctx context.Context, queue, id string) error, error) {
	switch op {
	case actCancel:
		return h.in.Delete, nil
	case actPromote:
		return h.in.Promote, nil
	case actRequeue:
		return h.in.Requeue, nil
	}
	return nil, fmt.Errorf("no action %q for the selected items: cancel, promote or requeue: %w", op, errBadInput)
}

// bulkIDs returns the IDs the form selected (fields id), without blanks
// or repeats, in order: at least one, at most inspect.MaxPage.
func bulkIDs(form url.Values) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, id := range form["id"] {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		return nil, fmt.Errorf("no item selected: tick the box of each item to act on: %w", errBadInput)
	case len(ids) > inspect.MaxPage:
		return nil, fmt.Errorf("%d items selected, at most %d at once: %w", len(ids), inspect.MaxPage, errBadInput)
	}
	return ids, nil
}

// maxMissedShown bounds the IDs a bulk action's message names as not
// done.
const maxMissedShown = 5

// bulk applies the form's op (cancel, promote or requeue) to each item
// the form selected, statsWorkers at a time, each as its own action does.
// An item not found where the action applies (taken, settled, cancelled
// or moved meanwhile) is skipped and named in the message; a Redis error
// stops the rest.
func (h *handler) bulk(ctx context.Context, r *http.Request, t *target) (string, error) {
	op := r.PostForm.Get("op")
	do, err := h.bulkOp(op)
	if err != nil {
		return "", err
	}
	ids, err := bulkIDs(r.PostForm)
	if err != nil {
		return "", err
	}
	var (
		mu     sync.Mutex
		done   int64
		missed []string
		failed error
	)
	each(len(ids), func(i int) {
		mu.Lock()
		stop := failed != nil
		mu.Unlock()
		if stop {
			return
		}
		err := do(ctx, t.Queue, ids[i])
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			done++
		case errors.Is(err, inspect.ErrNotFound), errors.Is(err, inspect.ErrInvalidArgument):
			missed = append(missed, ids[i])
		case failed == nil:
			failed = err
		}
	})
	past := bulkOps[op]
	if failed != nil {
		h.classify(r, failed) // logs it
		return "", &partialError{fmt.Sprintf("%s %d of %d items; then %s", past, done, len(ids), msgRedis)}
	}
	if len(missed) > 0 {
		shown := missed[:min(len(missed), maxMissedShown)]
		quoted := make([]string, len(shown))
		for i, id := range shown {
			quoted[i] = fmt.Sprintf("%q", id)
		}
		more := ""
		if n := len(missed) - len(shown); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		return "", &partialError{fmt.Sprintf("%s %d of %d items. Not %s, not found where that applies (taken, settled, cancelled or moved meanwhile): %s%s.",
			past, done, len(ids), strings.ToLower(past), strings.Join(quoted, ", "), more)}
	}
	return fmt.Sprintf("%s %s.", past, plural(done, "item")), nil
}
