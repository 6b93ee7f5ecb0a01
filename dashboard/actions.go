package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// The actions, by the last segment of the URL their forms POST to.
const (
	actCancel     = "cancel"
	actPromote    = "promote"
	actReschedule = "reschedule"
	actRequeue    = "requeue"
	actRequeueAll = "requeue-all"
	actPurge      = "purge"
	actPause      = "pause"
	actResume     = "resume"
)

// maxForm bounds the body of an action's request, in bytes.
const maxForm = 64 << 10

// actionFunc runs one action on its target and returns the flash message
// to show. It may change where the action returns (t.From).
type actionFunc func(ctx context.Context, r *http.Request, t *target) (string, error)

// actionFuncs returns the actions by name.
func (h *handler) actionFuncs() map[string]actionFunc {
	return map[string]actionFunc{
		actCancel:     h.cancel,
		actPromote:    h.promote,
		actReschedule: h.reschedule,
		actRequeue:    h.requeue,
		actRequeueAll: h.requeueAll,
		actPurge:      h.purge,
		actPause:      h.pause,
		actResume:     h.resume,
	}
}

// action answers a POST to the action name: it refuses other methods
// (405), every POST when read-only (403), a POST without a valid
// anti-forgery token (403); then runs the action and redirects (303) to
// the page the form was on, with a flash message.
func (h *handler) action(w http.ResponseWriter, r *http.Request, name string) {
	run, ok := h.actions[name]
	if !ok {
		h.renderError(w, r, http.StatusNotFound, fmt.Sprintf("No action %q.", name))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.renderError(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s not allowed: actions are POSTed by the dashboard's forms.", r.Method))
		return
	}
	if h.cfg.readOnly {
		h.renderError(w, r, http.StatusForbidden, "This dashboard is read-only.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		h.renderError(w, r, http.StatusBadRequest, "Cannot read the form: "+err.Error())
		return
	}
	if err := h.checkCSRF(r); err != nil {
		h.log.Warn("dashboard: action refused", "action", name, "err", err)
		h.renderError(w, r, http.StatusForbidden, "Refused: "+err.Error())
		return
	}
	t, err := readTarget(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id := r.URL.Query().Get("id")
	msg, err := run(r.Context(), r, &t)
	if err != nil {
		h.log.Info("dashboard: action failed", "action", name, "queue", t.Queue, "id", id, "err", err)
		h.fail(w, r, err)
		return
	}
	h.log.Info("dashboard: action", "action", name, "queue", t.Queue, "id", id, "result", msg)
	h.redirect(w, r, t, id, msg)
}

// redirect sends the browser back to t's page, with msg as its flash.
func (h *handler) redirect(w http.ResponseWriter, r *http.Request, t target, id, msg string) {
	l := linksFor(r)
	v := url.Values{}
	page := ""
	switch {
	case t.From == fromOverview:
	case t.From == fromItem && id != "":
		page = "item"
		v.Set("q", t.Queue)
		v.Set("id", id)
	default:
		page = "queue"
		v = t.values("")
		v.Del("from")
	}
	h.flashValues(v, msg)
	w.Header().Set("Location", l.to(page, v))
	w.WriteHeader(http.StatusSeeOther)
}

// cancel deletes the item id wherever it is. From the item's page, it
// returns to the queue's page: the item is gone.
func (h *handler) cancel(ctx context.Context, r *http.Request, t *target) (string, error) {
	id, err := idParam(r.URL.Query())
	if err != nil {
		return "", err
	}
	if err := h.in.Delete(ctx, t.Queue, id); err != nil {
		return "", err
	}
	t.From = fromQueue
	return fmt.Sprintf("Deleted item %q.", id), nil
}

// promote makes the delayed item or retry id due now.
func (h *handler) promote(ctx context.Context, r *http.Request, t *target) (string, error) {
	id, err := idParam(r.URL.Query())
	if err != nil {
		return "", err
	}
	if err := h.in.Promote(ctx, t.Queue, id); err != nil {
		return "", err
	}
	return fmt.Sprintf("Promoted item %q: it is ready now.", id), nil
}

// reschedule moves the delayed item or retry id to the due time of the
// form's field due: a duration from now on the Redis server's clock, or
// an RFC 3339 time. A time that has passed is refused (inspect's
// Reschedule): Promote is the one-click way to make an item ready now.
func (h *handler) reschedule(ctx context.Context, r *http.Request, t *target) (string, error) {
	id, err := idParam(r.URL.Query())
	if err != nil {
		return "", err
	}
	now, err := h.rdb.Time(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("reading the Redis server's clock: %w", err)
	}
	due, err := parseDue(r.PostForm.Get("due"), now)
	if err != nil {
		return "", err
	}
	if err := h.in.Reschedule(ctx, t.Queue, id, due); err != nil {
		return "", err
	}
	return fmt.Sprintf("Rescheduled item %q to %s.", id, formatTime(due)), nil
}

// requeue moves the dead letter id back to the ready items.
func (h *handler) requeue(ctx context.Context, r *http.Request, t *target) (string, error) {
	id, err := idParam(r.URL.Query())
	if err != nil {
		return "", err
	}
	if err := h.in.Requeue(ctx, t.Queue, id); err != nil {
		return "", err
	}
	return fmt.Sprintf("Requeued dead letter %q: it is ready now.", id), nil
}

// requeueAll moves every dead letter back to the ready items.
func (h *handler) requeueAll(ctx context.Context, _ *http.Request, t *target) (string, error) {
	n, err := h.in.RequeueAll(ctx, t.Queue)
	if err != nil {
		return "", fmt.Errorf("%d dead letters requeued before: %w", n, err)
	}
	return fmt.Sprintf("Requeued %s.", plural(n, "dead letter")), nil
}

// purge drops every item in the state of the parameter state, when the
// form's field confirm is "yes".
func (h *handler) purge(ctx context.Context, r *http.Request, t *target) (string, error) {
	st, err := stateParam(r.URL.Query(), "")
	if err == nil && st == "" {
		err = fmt.Errorf("missing state to purge (parameter state): %w", errBadInput)
	}
	if err != nil {
		return "", err
	}
	if r.PostForm.Get("confirm") != "yes" {
		return "", fmt.Errorf("purge not confirmed (form field confirm=yes): %w", errBadInput)
	}
	n, err := h.in.Purge(ctx, t.Queue, st)
	if err != nil {
		return "", err
	}
	t.State, t.Offset = st, 0
	return fmt.Sprintf("Purged %s.", plural(n, string(st)+" item")), nil
}

// pause stops every process from handing out the queue's items.
func (h *handler) pause(ctx context.Context, _ *http.Request, t *target) (string, error) {
	if err := h.in.Pause(ctx, t.Queue); err != nil {
		return "", err
	}
	return fmt.Sprintf("Paused queue %q: no process hands out its items until it is resumed.", t.Queue), nil
}

// resume undoes pause.
func (h *handler) resume(ctx context.Context, _ *http.Request, t *target) (string, error) {
	if err := h.in.Resume(ctx, t.Queue); err != nil {
		return "", err
	}
	return fmt.Sprintf("Resumed queue %q.", t.Queue), nil
}

// plural writes n and what, with an s unless n is 1.
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}
