package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/redelay/redelay/inspect"
)

// The actions, by the last segment of the URL their forms POST to. Their
// names are the command line's verbs: cancel deletes an item wherever it
// is, as `redelay cancel` does.
const (
	actCancel     = "cancel"
	actPromote    = "promote"
	actReschedule = "reschedule"
	actRequeue    = "requeue"
	actRequeueAll = "requeue-all"
	actPurge      = "purge"
	actPause      = "pause"
	actResume     = "resume"
	actBulk       = "bulk"
	actRunSched   = "run-schedule"
	actUnschedule = "unschedule"
	actForget     = "forget"
	// actPauseGroup and actResumeGroup pause and resume one group of a
	// queue (target.Group).
	actPauseGroup  = "pause-group"
	actResumeGroup = "resume-group"
)

// askFirst are the actions that ask to confirm first: a POST without the
// form field confirm=yes answers a page that asks (and changes nothing),
// whose form POSTs the same with confirm=yes. They stop consumers, delete
// items or act on many at once; the others change one item in a way
// another click undoes.
var askFirst = map[string]bool{
	actCancel:     true,
	actPause:      true,
	actRequeueAll: true,
	actPurge:      true,
	actBulk:       true,
	actUnschedule: true,
	actForget:     true,
	actPauseGroup: true,
}

// maxForm bounds the body of an action's request, in bytes; maxBulkForm
// that of a bulk action, which lists up to inspect.MaxPage IDs.
const (
	maxForm     = 64 << 10
	maxBulkForm = 1 << 20
)

// actionFunc runs one action on its target and returns the flash message
// to show. It may change where the action returns (t.From).
type actionFunc func(ctx context.Context, r *http.Request, t *target) (string, error)

// actionFuncs returns the actions by name.
func (h *handler) actionFuncs() map[string]actionFunc {
	return map[string]actionFunc{
		actCancel:      h.cancel,
		actPromote:     h.promote,
		actReschedule:  h.reschedule,
		actRequeue:     h.requeue,
		actRequeueAll:  h.requeueAll,
		actPurge:       h.purge,
		actPause:       h.pause,
		actResume:      h.resume,
		actBulk:        h.bulk,
		actRunSched:    h.runSchedule,
		actUnschedule:  h.unschedule,
		actForget:      h.forget,
		actPauseGroup:  h.pauseGroup,
		actResumeGroup: h.resumeGroup,
	}
}

// action answers a POST to the action name: it refuses other methods
// (405), every POST when read-only (403), a POST without a valid
// anti-forgery token (403), one whose target names no queue (400); asks
// to confirm the actions of askFirst; then runs the action and redirects
// (303) to the page the form was on, with a flash message: what was done,
// or, in plain words, why it could not be.
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
	limit := int64(maxForm)
	if name == actBulk {
		limit = maxBulkForm
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
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
		h.fail(w, r, err) // no page to return to
		return
	}
	id := r.URL.Query().Get("id")
	if askFirst[name] && r.PostForm.Get("confirm") != "yes" {
		h.confirm(w, r, name, t, id)
		return
	}
	msg, err := run(r.Context(), r, &t)
	if err != nil {
		h.log.Info("dashboard: action failed", "action", name, "queue", t.Queue, "id", id, "err", err)
		h.redirect(w, r, t, id, h.failure(r, name, &t, id, err), true)
		return
	}
	h.log.Info("dashboard: action", "action", name, "queue", t.Queue, "id", id, "result", msg)
	h.redirect(w, r, t, id, msg, false)
}

// redirect sends the browser back to t's page, with msg as its flash, an
// error's when failed.
func (h *handler) redirect(w http.ResponseWriter, r *http.Request, t target, id, msg string, failed bool) {
	w.Header().Set("Location", h.back(linksFor(r), t, id, msg, failed))
	w.WriteHeader(http.StatusSeeOther)
}

// back returns the URL of the page t returns to, with msg as its flash
// (none when "").
func (h *handler) back(l links, t target, id, msg string, failed bool) string {
	v := url.Values{}
	page := ""
	switch {
	case t.From == fromOverview:
	case t.From == fromSchedules:
		page = "schedules"
		v.Set("q", t.Queue)
	case t.From == fromItem && id != "":
		page = "item"
		v.Set("q", t.Queue)
		v.Set("id", id)
	default:
		page = "queue"
		v = t.values("")
		v.Del("from")
	}
	if msg != "" {
		h.flashValues(v, msg, failed)
	}
	return l.to(page, v)
}

// failure returns what the page the action returns to says of err, in
// plain words, and sends it where that page still exists: from an item
// that is gone, to its queue's page; from a queue that is gone (or cannot
// be read), to the overview.
func (h *handler) failure(r *http.Request, name string, t *target, id string, err error) string {
	if pe := (*partialError)(nil); errors.As(err, &pe) {
		return pe.msg
	}
	status, msg := h.classify(r, err)
	msg = strings.TrimSuffix(strings.TrimPrefix(msg, "queue "+strconv.Quote(t.Queue)+": "), ".")
	if status == http.StatusNotFound {
		if _, serr := h.in.Stats(r.Context(), t.Queue); serr != nil {
			t.From = fromOverview
		} else if t.From == fromItem {
			t.From = fromQueue
		}
		if strings.HasPrefix(msg, "no item ") {
			msg += " (it may have been taken, settled or cancelled meanwhile)"
		}
	}
	return fmt.Sprintf("Could not %s: %s.", what(name, *t, id), msg)
}

// what says what the action name does to its target t (item id), after
// a verb's "could not".
func what(name string, t target, id string) string {
	queue := t.Queue
	switch name {
	case actRunSched:
		return fmt.Sprintf("run schedule %q of queue %q", t.Schedule, queue)
	case actUnschedule:
		return fmt.Sprintf("remove schedule %q of queue %q", t.Schedule, queue)
	case actForget:
		return fmt.Sprintf("forget queue %q", queue)
	case actRequeueAll:
		return fmt.Sprintf("requeue the dead letters of queue %q", queue)
	case actPurge:
		return fmt.Sprintf("purge queue %q", queue)
	case actPause, actResume:
		return fmt.Sprintf("%s queue %q", name, queue)
	case actPauseGroup:
		return fmt.Sprintf("pause group %q of queue %q", t.Group, queue)
	case actResumeGroup:
		return fmt.Sprintf("resume group %q of queue %q", t.Group, queue)
	case actBulk:
		return fmt.Sprintf("act on the selected items of queue %q", queue)
	}
	return fmt.Sprintf("%s item %q", name, id)
}

// partialError is a bulk action done for some items only: its message
// says which.
type partialError struct {
	msg string
}

func (e *partialError) Error() string { return e.msg }

// cancel deletes the item id wherever it is (inspect.Delete). From the
// item's page, it returns to the queue's page: the item is gone.
func (h *handler) cancel(ctx context.Context, r *http.Request, t *target) (string, error) {
	id, err := idParam(r.URL.Query())
	if err != nil {
		return "", err
	}
	if err := h.in.Delete(ctx, t.Queue, id); err != nil {
		return "", err
	}
	t.From = fromQueue
	return fmt.Sprintf("Cancelled item %q: it is gone from the queue.", id), nil
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
	t.Offset = 0
	return fmt.Sprintf("Requeued %s.", plural(n, "dead letter")), nil
}

// purge drops every item in the state of the parameter state.
func (h *handler) purge(ctx context.Context, r *http.Request, t *target) (string, error) {
	st, err := purgeState(r.URL.Query())
	if err != nil {
		return "", err
	}
	n, err := h.in.Purge(ctx, t.Queue, st)
	if err != nil {
		return "", err
	}
	t.State, t.Offset = st, 0
	return fmt.Sprintf("Purged %s.", plural(n, string(st)+" item")), nil
}

// purgeState returns the state to purge, of the parameter state.
func purgeState(v url.Values) (inspect.State, error) {
	st, err := stateParam(v, "")
	if err == nil && st == "" {
		err = fmt.Errorf("missing state to purge (parameter state): %w", errBadInput)
	}
	return st, err
}

// pause stops every process from handing out the queue's items.
func (h *handler) pause(ctx context.Context, _ *http.Request, t *target) (string, error) {
	if err := h.in.Pause(ctx, t.Queue); err != nil {
		return "", err
	}
	return fmt.Sprintf("Paused queue %q: no process hands out its items until it is resumed.", t.Queue), nil
}

// pauseGroup pauses one group of the queue (target.Group).
func (h *handler) pauseGroup(ctx context.Context, _ *http.Request, t *target) (string, error) {
	if err := h.in.PauseGroup(ctx, t.Queue, t.Group); err != nil {
		return "", err
	}
	return fmt.Sprintf("Paused group %q of queue %q: no process hands out its items until it is resumed; the other groups go on.", t.Group, t.Queue), nil
}

// resumeGroup undoes pauseGroup.
func (h *handler) resumeGroup(ctx context.Context, _ *http.Request, t *target) (string, error) {
	if err := h.in.ResumeGroup(ctx, t.Queue, t.Group); err != nil {
		return "", err
	}
	return fmt.Sprintf("Resumed group %q of queue %q.", t.Group, t.Queue), nil
}

// resume undoes pause.
func (h *handler) resume(ctx context.Context, _ *http.Request, t *target) (string, error) {
	if err := h.in.Resume(ctx, t.Queue); err != nil {
		return "", err
	}
	return fmt.Sprintf("Resumed queue %q.", t.Queue), nil
}

// runSchedule runs the schedule t.Schedule once now (inspect's
// RunSchedule): one item, ready at once; the schedule is left as it is.
func (h *handler) runSchedule(ctx context.Context, _ *http.Request, t *target) (string, error) {
	name, err := scheduleParam(t.Schedule)
	if err != nil {
		return "", err
	}
	id, err := h.in.RunSchedule(ctx, t.Queue, name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Ran schedule %q now: item %q is ready; its next tick is unchanged.", name, id), nil
}

// unschedule removes the schedule t.Schedule and its ticks not yet
// delivered (inspect's Unschedule).
func (h *handler) unschedule(ctx context.Context, _ *http.Request, t *target) (string, error) {
	name, err := scheduleParam(t.Schedule)
	if err != nil {
		return "", err
	}
	ok, err := h.in.Unschedule(ctx, t.Queue, name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("no schedule %q (removed meanwhile?): %w", name, inspect.ErrNotFound)
	}
	return fmt.Sprintf("Removed schedule %q: it ticks no more.", name), nil
}

// forget removes a queue that holds nothing (inspect's Forget) and
// returns to the overview, where it is no longer listed.
func (h *handler) forget(ctx context.Context, _ *http.Request, t *target) (string, error) {
	if err := h.in.Forget(ctx, t.Queue); err != nil {
		return "", err
	}
	t.From = fromOverview
	return fmt.Sprintf("Forgot queue %q: it holds nothing and is no longer listed, until a process uses it again.", t.Queue), nil
}

// scheduleParam checks the name of a schedule an action acts on.
func scheduleParam(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("missing schedule name (parameter schedule): %w", errBadInput)
	}
	return name, nil
}

// plural writes n and what, with an s unless n is 1.
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}
