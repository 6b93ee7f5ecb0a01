// Package dashboard is a web dashboard of the redelay queues on one Redis
// deployment, as an http.Handler to mount in an application: it shows
// every queue and its items, and steers them (cancel, promote, reschedule,
// requeue, purge, pause), through package inspect. It is server-rendered
// with html/template, its style sheet and script are embedded (nothing is
// fetched from elsewhere, no build step), and every page is fully usable
// without JavaScript; the script only adds a live chart and rates.
//
// # Pages
//
//   - The overview: every queue of the registry (inspect.Queues) with its
//     counts by state (delayed, retry, ready, inflight, dead), whether it is
//     paused, its latency and next due time, its processed and failed
//     totals (inspect.Stats) and, filled in by the script, its processed
//     and failed items in the last complete minute (inspect.History; the
//     minute under way is never shown as a rate). Below, drawn by the
//     script: a chart of the processed and failed items per minute of
//     every queue summed, over the last 1 h, 6 h or 24 h, from Redis (it
//     survives a reload), and a chart of the depth by state over the
//     samples the page took (every 2 s while it is open; not stored). The
//     handler runs no goroutine of its own. The stats of all queues are
//     read concurrently (8 at a time), one round trip per queue; the
//     history, polled every 15 s, costs three per queue.
//   - A queue: a tab per state with its count, one page of the items in the
//     tab's state (ID, due or lease time, enqueued time, attempt, priority,
//     last error from the header redelay-error, and the value as indented
//     JSON cut at 2000 bytes, or why it could not be decoded), the actions
//     on each item and on the queue, and a form to jump to an item by ID.
//   - An item: every field, its headers, its value, its stored bytes (the
//     first 4 KiB), and the actions that apply to its state. A dead letter
//     tells its story: its attempts (the deliveries before it died), when
//     it was dead-lettered and how long ago, and the errors of its last
//     failed attempts (up to 10), newest last. The headers that hold these
//     (redelay-errors, redelay-dead-at, redelay-attempts) are not repeated
//     in the header table; redelay-error, the last error whole, is. The value's
//     text stops at 256 KiB, and arrays and objects nested more than 100
//     levels deep are shown as […] and {…} (see inspect.FormatJSON); the
//     page says when either happened, so that a small payload nested or
//     indented into a huge text costs a bounded page.
//   - A queue's recurring schedules: name, spec, next and last tick.
//
// # Stale figures
//
// Every page but an error page names, in its body's data-live attribute,
// the JSON of the stats it shows (api/overview, or api/overview?q=NAME
// on the pages of one queue), which the script polls every 2 s. When a
// refresh fails (the request errs or takes over 10 s, or the answer is
// not 2xx), a banner at the top of the window, which stays there as the
// page scrolls, says since when, in the browser's local time: "Redis
// unreachable since 07:55:30 — figures below are from then" for a 5xx
// answer (a Redis error answers 502), "The dashboard is unreachable
// since …" when the dashboard itself did not answer. Meanwhile the
// figures are greyed and every action (each POST form's controls, and the
// links to confirm pages) is disabled. The first refresh that succeeds
// removes the banner and enables them again, and its figures replace the
// old ones: on the overview, a queue no longer in Redis (after a restart
// that kept no data) keeps its row, marked "gone from Redis", its counts
// replaced by dashes and its actions disabled, and queues that appeared
// are named above the table with a link to reload; on a page of one queue
// (its JSON answers 404) a note says the queue is gone, and its actions
// are disabled.
//
// Every page carries a banner when the Redis server may evict keys (its
// maxmemory-policy, on any master, is not noeviction: items can vanish
// without an error), read with inspect.Inspector.Eviction: once per
// client, and again when the reading is a minute old.
//
// # Mounting behind authentication
//
// The dashboard has no authentication of its own: put it behind the
// application's. Every link and form action is relative, so it works at "/"
// and under any prefix removed with http.StripPrefix:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	dash := dashboard.New(rdb, dashboard.WithLogger(logger))
//	mux := http.NewServeMux()
//	mux.Handle("/admin/queues/", basicAuth(http.StripPrefix("/admin/queues", dash)))
//
//	func basicAuth(next http.Handler) http.Handler {
//		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//			user, pass, ok := r.BasicAuth()
//			if !ok || subtle.ConstantTimeCompare([]byte(user+":"+pass), []byte(expected)) != 1 {
//				w.Header().Set("WWW-Authenticate", `Basic realm="queues"`)
//				http.Error(w, "unauthorized", http.StatusUnauthorized)
//				return
//			}
//			next.ServeHTTP(w, r)
//		})
//	}
//
// A request for the prefix without its trailing slash ("/admin/queues") is
// redirected to it with the slash. The handler is safe for concurrent use,
// makes no network call until a request comes, and needs no Close.
//
// # Read-only mode
//
// With ReadOnly, no action button or form is rendered and every POST is
// refused with 403 Forbidden, with or without a valid token; the confirm
// page of a purge answers 403 too. Mount a read-only dashboard for people
// who may look but not touch, and a full one for operators.
//
// # Safety
//
// Queue names, IDs, headers and values are shown as text: html/template
// escapes them in text, attributes and URLs, and they travel as query
// parameters (a name or ID may hold '/', '?', '#', quotes, or be ".."). No
// Redis address, password or error text is shown: a Redis error answers
// 502 Bad Gateway with a fixed message and goes to the logger. Every
// response carries Content-Security-Policy "default-src 'self';
// script-src 'self'; style-src 'self'; img-src 'self' data:; form-action
// 'self'; frame-ancestors 'none'; base-uri 'none'" (no inline script or
// style), X-Content-Type-Options: nosniff, X-Frame-Options: DENY and
// Referrer-Policy: same-origin. Pages are sent with Cache-Control:
// no-store.
//
// Actions are POST only (any other method answers 405 Method Not
// Allowed), protected against cross-site request forgery three ways:
//
//   - A signed double-submit token. The first page a browser loads sets a
//     cookie (HttpOnly, SameSite=Strict, Path=/, Secure over HTTPS or behind
//     a proxy that sets X-Forwarded-Proto: https) holding a token: 128
//     random bits and their HMAC-SHA256 under the handler's secret. Every
//     form carries the same token in a hidden field "csrf". A POST is
//     accepted only when the cookie and the field are present and equal
//     (compared in constant time) and the MAC checks (hmac.Equal): a page of
//     another site can neither read the cookie nor forge a token, and a
//     cookie planted by a sibling subdomain fails the MAC.
//   - The cookie is SameSite=Strict, so a cross-site request does not
//     carry it.
//   - http.CrossOriginProtection refuses POSTs that the browser marks as
//     cross-origin (Sec-Fetch-Site, or an Origin that differs from Host).
//
// A POST that fails any of these answers 403 Forbidden and changes
// nothing. The secret is 32 random bytes from crypto/rand made at New, so
// a token is valid at the handler that issued it only; give every replica
// behind a load balancer the same key with WithSecret. The cookie's name
// depends on the key, so two dashboards with different keys on one host do
// not overwrite each other's tokens. The same key signs the flash messages
// (see below), so a crafted link cannot make the dashboard show words of
// its own.
//
// After an action the browser is redirected (303 See Other) to the page
// it came from, with a short flash message in the query (its parameters
// flash and fs, the message's MAC).
//
// # Errors
//
// A missing queue or item answers 404 Not Found, bad input (an unknown
// state, an offset or limit out of range, a due time that is neither a
// duration nor an RFC 3339 time, a missing parameter) 400 Bad Request, a
// Redis error 502 Bad Gateway: each a page with a one-line message. The
// JSON endpoint answers the same statuses with {"error": "..."}.
//
// # URL layout
//
// Paths are relative to the mount point. Pages (GET or HEAD):
//
//	./                                  the overview
//	queue?q=NAME[&state=S][&offset=N][&limit=N]
//	                                    a queue: state delayed (default), retry,
//	                                    ready, inflight or dead; offset from 0;
//	                                    limit 1 to inspect.MaxPage, default 50
//	item?q=NAME&id=ID                   an item (also where the jump-to-ID form goes)
//	schedules?q=NAME                    a queue's recurring schedules
//	purge?q=NAME&state=S                asks to confirm a purge (changes nothing)
//	api/overview[?q=NAME]               JSON: {"time", "queues": [{"name",
//	                                    "delayed", "retry", "ready", "inflight",
//	                                    "dead", "processed", "failed", "paused",
//	                                    "latency_ms", "next_due", "error"}]}, of
//	                                    every queue or of one
//	api/history[?q=NAME][&minutes=N]    JSON: {"time", "minutes", "samples":
//	                                    [{"at", "processed", "failed"}], "queues":
//	                                    [{"name", "last_minute": {"at", "processed",
//	                                    "failed"}, "error"}]}: one sample per minute
//	                                    over the last N minutes (1 to 1440, default
//	                                    60), oldest first, the last the minute under
//	                                    way, of the queue or summed over every queue;
//	                                    each queue's last complete minute
//	assets/dashboard.css, assets/dashboard.js
//
// Actions (POST, form field csrf; the query names the target, and the
// page to return to with from=overview|item, state, offset, limit):
//
//	actions/cancel?q=NAME&id=ID         delete the item, wherever it is (inspect.Delete)
//	actions/promote?q=NAME&id=ID        make a delayed item or retry due now
//	actions/reschedule?q=NAME&id=ID     form field due: a duration from now on the
//	                                    Redis server's clock ("10m") or an RFC 3339 time
//	actions/requeue?q=NAME&id=ID        move a dead letter back to ready
//	actions/requeue-all?q=NAME          move every dead letter back to ready
//	actions/purge?q=NAME&state=S        form field confirm=yes: drop every item in S
//	actions/pause?q=NAME                stop every process from handing out items
//	actions/resume?q=NAME               undo pause
//
// # Hooks for browser tests
//
// Elements carry stable data-testid attributes:
//
//   - overview: each queue's row "queue-row" with data-queue="NAME"; in it
//     the link "queue-link", the counts "count-delayed", "count-retry",
//     "count-ready", "count-inflight", "count-dead", "paused" (present only
//     while the queue is paused), "latency", "processed", "failed",
//     "processed-rate" and "failed-rate" (the last complete minute, filled
//     by the script), "stats-error" when its stats could not be read; the
//     totals row "totals" with "total-<state>", "total-processed",
//     "total-failed", "total-processed-rate", "total-failed-rate"; "no-queues" when
//     there is none; "new-queues" with "new-queue-names" (hidden until a
//     queue appears that the page does not list); the form "open-queue" with its input
//     "open-queue-name"; the charts "history" (with the buttons
//     "range-60", "range-360", "range-1440" and the text
//     "history-summary") and "chart".
//   - queue page: "queue-name", "paused" (only while paused), "latency",
//     "processed", "failed", "processed-rate", "failed-rate", the charts
//     "history" and "chart",
//     the tabs "tab-delayed", "tab-retry", "tab-ready", "tab-inflight",
//     "tab-dead" (the active one has aria-current="page"), "range" (which
//     items are shown), each item's row "item-row" with data-id="ID", in it
//     "item-link" and the value's cell "payload"; "no-items" when the page
//     is empty; "page-prev" and "page-next"; the jump form "jump", its
//     input "jump-id" and button "jump-submit"; "schedules-link".
//   - item page: "item-id", "item-state", "item-fields", "attempt",
//     "dead-at" (a dead letter's), "errors" with an "error-entry" per
//     error, newest last,
//     "headers" with rows "header-row" (data-name), "payload", "raw".
//   - schedules page: rows "schedule-row" with data-name, "schedule-spec";
//     "no-schedules" when there is none.
//   - actions (absent when read-only): buttons "action-cancel",
//     "action-promote", "action-reschedule" (with its input
//     "reschedule-due"), "action-requeue", "action-requeue-all",
//     "action-pause", "action-resume", and the link "action-purge", which
//     opens the confirm page whose button is "confirm-purge" (and link
//     "cancel-purge").
//   - every page: "stale" (the banner of a failed refresh, hidden until
//     one fails), "gone" (the note that the page's queue is no longer in
//     Redis, hidden until it is not), "flash" (the message an action left), "home-link",
//     "read-only" (the badge of a read-only dashboard); the breadcrumbs of
//     the pages below the overview: "overview-link", "queue-link" and, on an
//     item's page, "state-link"; error pages: "error".
package dashboard
