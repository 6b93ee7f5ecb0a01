package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/redelay/redelay/inspect"
)

//go:embed templates/*.html
var templateFS embed.FS

// parseTemplates parses every page: each is a template file that defines
// "content" inside the shared layout.
func parseTemplates() (map[string]*template.Template, error) {
	names := []string{"overview", "queue", "item", "schedules", "confirm", "consumers", "redis", "error"}
	pages := make(map[string]*template.Template, len(names))
	for _, name := range names {
		t, err := template.New(name).Funcs(templateFuncs()).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

// view is what every page's template gets.
type view struct {
	Title    string // the dashboard's title
	Heading  string // the page's, for its <title>
	L        links
	ReadOnly bool
	CSRF     string // the token for the page's forms; "" when read-only
	Flash    string // the message an action left, checked
	// FlashError: Flash says why the action failed.
	FlashError bool
	// Eviction is the Redis server's maxmemory-policy when it may evict
	// keys (a banner says so on every page); "" otherwise.
	Eviction string
	// Server names the Redis the dashboard reads (see serverName), for
	// the header of every page.
	Server string
	Now    time.Time
	States []inspect.State
	// Live is the URL of the JSON the page's script polls to keep its
	// figures current and to tell when they stop being so; "" for a page
	// with nothing to refresh (an error page).
	Live string
	Data any // the page's own
}

// polled is the data of a page whose figures the script refreshes.
type polled interface {
	liveURL() string
}

// render writes the page name with data, with status.
func (h *handler) render(w http.ResponseWriter, r *http.Request, status int, name, heading string, data any) {
	v := view{
		Title:    h.cfg.title,
		Server:   h.server,
		Heading:  heading,
		L:        linksFor(r),
		ReadOnly: h.cfg.readOnly,
		Now:      time.Now(),
		States:   inspect.States(),
		Data:     data,
	}
	if p, ok := data.(polled); ok {
		v.Live = p.liveURL()
	}
	if p, err := h.in.Eviction(r.Context()); err == nil && p != "noeviction" {
		v.Eviction = p
	}
	if name != "error" {
		v.Flash, v.FlashError = h.flash(r.URL.Query())
		if !h.cfg.readOnly {
			v.CSRF = h.csrfToken(w, r)
		}
	}
	var buf bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		h.log.Error("dashboard: rendering a page", "page", name, "err", err)
		http.Error(w, "cannot render the page: see the application's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPage is the data of the error page.
type errorPage struct {
	Status     int
	StatusText string
	Message    string
}

// renderError writes the error page: status and a one-line message.
func (h *handler) renderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error", http.StatusText(status), errorPage{
		Status:     status,
		StatusText: http.StatusText(status),
		Message:    msg,
	})
}

// msgRedis is what a page says of a Redis error, whose details go to the
// log only: they may name servers and addresses.
const msgRedis = "Redis did not answer as expected; the details are in the application's log."

// classify returns the status and the one-line message for err: 404 for a
// missing queue or item, 400 for bad input, 502 for anything else (Redis
// errors, which are logged).
func (h *handler) classify(r *http.Request, err error) (int, string) {
	switch {
	case errors.Is(err, inspect.ErrNotFound):
		return http.StatusNotFound, plain(err)
	case errors.Is(err, errBadInput), errors.Is(err, inspect.ErrInvalidArgument):
		return http.StatusBadRequest, plain(err)
	case errors.Is(err, inspect.ErrNotEmpty):
		return http.StatusConflict, plain(err)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		h.log.Debug("dashboard: request abandoned", "path", r.URL.Path, "err", err)
		return http.StatusBadGateway, msgRedis
	default:
		h.log.Error("dashboard: redis error", "path", r.URL.Path, "err", err)
		return http.StatusBadGateway, msgRedis
	}
}

// sentinels are the errors whose words end the messages of the errors
// that wrap them: the kind, for code, not for people.
var sentinels = []error{inspect.ErrNotFound, inspect.ErrInvalidArgument, inspect.ErrNotEmpty, errBadInput}

// reOp matches how the inspector starts its errors: the operation and the
// queue, as in `get "orders": `.
var reOp = regexp.MustCompile(`^[a-z-]+ ("(?:[^"\\]|\\.)*"): `)

// plain returns the message of err, a missing queue or item or bad input,
// in plain words: without the sentinel's words at its end (": redelay: not
// found", ": bad request"), and with the inspector's operation at its
// start said as the queue it is about (`queue "orders": no item "x"`
// rather than `get "orders": no item "x": redelay: not found`).
func plain(err error) string {
	msg := err.Error()
	for _, s := range sentinels {
		msg = strings.TrimSuffix(msg, ": "+s.Error())
	}
	if m := reOp.FindStringSubmatchIndex(msg); m != nil {
		msg = "queue " + msg[m[2]:m[3]] + ": " + msg[m[1]:]
	}
	return msg
}

// fail writes the error page for err.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := h.classify(r, err)
	h.renderError(w, r, status, msg)
}

// setSecurityHeaders sets the headers every response carries: no inline
// script or style, no framing, no sniffing, no referrer to other sites.
func setSecurityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
}
