// Package dashboard is a web dashboard of the redelay queues on one Redis
// deployment, as an http.Handler to mount in an application: it shows
// every queue and its items, and steers them (cancel, promote, reschedule,
// requeue, purge, pause, run or remove a schedule, forget an empty queue),
// through package inspect. It is server-rendered
// with html/template, its style sheet and script are embedded (nothing is
// fetched from elsewhere, no build step), and every page is fully usable
// without JavaScript; the script adds live figures, the per-minute
// figures, the charts, the banner of a failed refresh and a box that
// ticks every item listed. The pages fit a phone's screen (below 760 px
// wide, each table row becomes a card) and follow the system's dark mode
// (prefers-color-scheme).
//
// The actions are the command line's verbs: cancel (delete an item,
// wherever it is), promote, reschedule, requeue, requeue all, purge, pause,
// resume, run-schedule, unschedule and forget.
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
//   - A queue: its latency, next due time, processed and failed totals and
//     last complete minute; a tab per state with its count; one page of the
//     items in the tab's state, one line each: a box to select it, its ID,
//     when it falls due (a lease's end in flight, when it was
//     dead-lettered for a dead letter), attempt, priority, its last error
//     (and how many came before) and its value as compact JSON cut to the
//     line, which opens on the indented JSON (cut at 2000 bytes; the item's
//     page shows more), and its actions. The items selected are promoted,
//     requeued or cancelled at once. Pages of 25 to 1000 items, with links
//     to the first, previous, nearby, next and last pages and a form that
//     picks a page and a page size. The find form looks up an ID: whole,
//     in every state (inspect.Get, which reads each state from its start,
//     up to blocking.ScanLimit entries), and as the start of the IDs of
//     1000 items of the tab's state from the page's offset (one List): it
//     says which items it compared and links to the next 1000; it does not
//     search a whole state at once.
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
//   - A queue's recurring schedules: name, spec, zone, missed-tick policy,
//     next tick (flagged when overdue) and last tick; a button to run each
//     once now, and one to remove it.
//   - The consumers: every process consuming a queue, as each Consume
//     records itself every 5 s (inspect.Consumers, one round trip): its
//     queue, host, PID, concurrency, deliveries in flight, when it started
//     and was last seen. A queue's page lists its own.
//   - Redis: the address its client was given (never a password), version,
//     mode and masters, memory used of maxmemory, eviction policy and
//     connected clients (inspect.Server: INFO, one round trip per master);
//     a server that refuses INFO to the dashboard's user is said to. The
//     header of every page names the server and links here.
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
// parameters (a name or ID may hold '/', '?', '#', quotes, or be "..").
// The header of every page names the Redis server by the address its
// client was given (a Cluster's first seed), which holds no password; no
// password and no Redis error's text is ever shown: a Redis error answers
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
// Pause, cancel, requeue all, purge, unschedule, forget and the actions on
// selected items ask
// to confirm first, on a page of the dashboard's own, so that they ask
// with script off too: their POST without the form field confirm=yes
// answers a page that says what will be done (how many items wait, the
// state of the item, the IDs selected) and changes nothing; its form
// POSTs the same with confirm=yes, its link goes back. Their buttons end
// with "…".
//
// After an action the browser is redirected (303 See Other) to the page
// it came from, with a short flash message in the query (its parameters
// flash and fs, the message's MAC, and fk=error for a failure): what was
// done, or why it could not be, in plain words ("Could not reschedule
// item "x": due time "soon" is neither a duration such as 10m nor an RFC
// 3339 time …"). An action on an item that is gone returns to its queue's
// page, on a queue that is gone to the overview.
//
// # Errors
//
// A missing queue or item answers 404 Not Found, bad input (an unknown
// state, an offset or limit out of range, a missing parameter) 400 Bad
// Request, a Redis error 502 Bad Gateway: each a page with a one-line
// message in plain words. The JSON endpoints answer the same statuses
// with {"error": "..."}. An action answers with an error page only when
// it cannot return anywhere (no queue named, a refused token).
//
// # URL layout
//
// Paths are relative to the mount point. Pages (GET or HEAD):
//
//	./                                  the overview
//	queue?q=NAME[&state=S][&offset=N|&page=N][&limit=N][&find=ID]
//	                                    a queue: state delayed (default), retry,
//	                                    ready, inflight or dead; offset from 0, or
//	                                    page from 1; limit 1 to inspect.MaxPage,
//	                                    default 50; find: the ID to look up, whole
//	                                    and as a prefix (see above)
//	item?q=NAME&id=ID                   an item
//	schedules?q=NAME                    a queue's recurring schedules
//	consumers                           the processes consuming the queues
//	redis                               the Redis server the queues are on
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
// page to return to with from=overview|item|schedules, state, offset, limit, find;
// those marked * ask to confirm unless the form has confirm=yes):
//
//	actions/cancel?q=NAME&id=ID       * delete the item, wherever it is (inspect.Delete)
//	actions/promote?q=NAME&id=ID        make a delayed item or retry due now
//	actions/reschedule?q=NAME&id=ID     form field due: a duration from now on the
//	                                    Redis server's clock ("10m") or an RFC 3339 time
//	actions/requeue?q=NAME&id=ID        move a dead letter back to ready
//	actions/requeue-all?q=NAME        * move every dead letter back to ready
//	actions/purge?q=NAME&state=S      * drop every item in S
//	actions/pause?q=NAME              * stop every process from handing out items
//	actions/resume?q=NAME               undo pause
//	actions/run-schedule?q=NAME&schedule=S  offer one tick of schedule S now
//	                                    (inspect.RunSchedule); its next tick is unchanged
//	actions/unschedule?q=NAME&schedule=S * remove schedule S (inspect.Unschedule)
//	actions/forget?q=NAME             * forget a queue that holds nothing
//	                                    (inspect.Forget; refused when it holds any)
//	actions/bulk?q=NAME               * form fields op (cancel, promote or requeue)
//	                                    and id, once per item (up to inspect.MaxPage):
//	                                    each item as its own action does; those not
//	                                    found where it applies are named, not done
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
//     "processed", "failed", "dead-dropped" (once the dead-letter bounds
//     dropped any), "processed-rate", "failed-rate", the charts
//     "history" and "chart",
//     the tabs "tab-delayed", "tab-retry", "tab-ready", "tab-inflight",
//     "tab-dead" (the active one has aria-current="page"), "range" (which
//     items are shown), each item's row "item-row" with data-id="ID", in it
//     "select" (its box), "item-link", "dead-at", "last-error",
//     "earlier-errors", the value's line "payload-line" and its whole text
//     "payload"; "no-items" when the page is empty; the box "select-all"
//     and the form "bulk" with "selected-count" and the buttons
//     "bulk-promote", "bulk-requeue", "bulk-cancel"; the pager "pager" with
//     "page-first", "page-prev", "page-N", "page-current", "page-next",
//     "page-last", and the form "page-form" with "page-number",
//     "page-size" and "page-go"; the find form "find" with "find-id",
//     "find-submit" and "find-clear", and its result "search-result" with
//     "exact-match" ("exact-link") and "search-window" ("search-next");
//     "schedules-link".
//   - item page: "item-id", "item-state", "item-fields", "attempt",
//     "dead-at" (a dead letter's), "errors" with an "error-entry" per
//     error, newest last,
//     "headers" with rows "header-row" (data-name), "payload", "raw".
//   - schedules page: rows "schedule-row" with data-name, "schedule-spec",
//     "schedule-zone", "schedule-missed", "schedule-overdue" (only when
//     overdue), the buttons "action-run-schedule" and "action-unschedule";
//     "no-schedules" when there is none.
//   - consumers (the page, and a queue's): "consumers" with rows
//     "consumer-row" (data-queue, data-pid), in them "consumer-queue" (on
//     the page of every consumer), "consumer-host", "consumer-pid",
//     "consumer-concurrency", "consumer-inflight"; "no-consumers" when there
//     is none.
//   - Redis page: "redis-addr", "redis-version", "redis-mode",
//     "redis-memory", "redis-eviction", "redis-clients"; "info-refused"
//     when the server refuses INFO.
//   - actions (absent when read-only): buttons "action-cancel",
//     "action-promote", "action-reschedule" (with its input
//     "reschedule-due"), "action-requeue", "action-requeue-all",
//     "action-pause", "action-resume", "action-forget" (on the page of a
//     queue that holds nothing), and the link "action-purge"; the
//     confirm page's "confirm-question", "confirm-detail", "confirm-ids"
//     (of a bulk action), its button "confirm" and link "confirm-keep".
//   - every page: "stale" (the banner of a failed refresh, hidden until
//     one fails), "gone" (the note that the page's queue is no longer in
//     Redis, hidden until it is not), "flash" (the message an action
//     left), "action-error" (why an action failed), "home-link", "server"
//     (the Redis server the header names), "nav-queues", "nav-consumers",
//     "read-only" (the badge of a read-only dashboard); the breadcrumbs of
//     the pages below the overview: "overview-link", "queue-link" and, on an
//     item's page, "state-link"; error pages: "error".
package dashboard
