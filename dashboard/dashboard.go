package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/inspect"
	iqueue "github.com/redelay/redelay/internal/queue"
)

// handler is the dashboard: an http.Handler over one Redis deployment.
type handler struct {
	in      *inspect.Inspector
	rdb     redis.UniversalClient
	cfg     config
	log     *slog.Logger
	sign    signer
	cookie  string                        // the name of the anti-forgery cookie
	server  string                        // the Redis it reads, for the header (serverName)
	origin  *http.CrossOriginProtection   // refuses cross-origin POSTs
	pages   map[string]*template.Template // by page name
	assets  map[string]asset              // by file name
	routes  map[string]http.HandlerFunc   // pages by path below the mount point
	actions map[string]actionFunc         // actions by name
	err     error                         // a bad option or template: every request answers 500
}

// New returns the dashboard of the queues on rdb (a *redis.Client, a
// *redis.ClusterClient or a failover client), as an http.Handler to mount
// behind the application's own authentication, under any prefix with
// http.StripPrefix (see the package documentation). New makes no network
// call and starts no goroutine; the handler needs no Close. A bad option
// makes every request answer 500 Internal Server Error, naming the problem
// in the log.
func New(rdb redis.UniversalClient, opts ...Option) http.Handler {
	cfg := config{title: defaultTitle}
	for _, opt := range opts {
		if opt == nil {
			cfg.fail(errors.New("nil Option"))
			continue
		}
		opt(&cfg)
	}
	if err := checkClient(rdb); err != nil {
		cfg.fail(err)
	}
	if cfg.secret == nil {
		cfg.secret = newSecret()
	}
	h := &handler{
		in:     inspect.New(rdb, inspect.WithPrefix(cmp.Or(cfg.prefix, iqueue.DefaultPrefix))),
		rdb:    rdb,
		cfg:    cfg,
		log:    cfg.logger,
		sign:   signer{key: cfg.secret},
		origin: http.NewCrossOriginProtection(),
		assets: loadAssets(),
		err:    cfg.err,
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.cookie = h.sign.cookieName()
	if h.err == nil {
		h.server = serverName(rdb)
	}
	pages, err := parseTemplates()
	if err != nil {
		h.err = fmt.Errorf("templates: %w", err)
	}
	h.pages = pages
	h.routes = map[string]http.HandlerFunc{
		"":             h.overview,
		"api/overview": h.apiOverview,
		"api/history":  h.apiHistory,
		"queue":        h.queue,
		"item":         h.item,
		"schedules":    h.schedules,
		"purge":        h.purgeConfirm,
		"consumers":    h.consumers,
		"redis":        h.redis,
	}
	h.actions = h.actionFuncs()
	return h
}

// ServeHTTP answers one request; see the package documentation for the
// URL layout. Paths are relative to where the handler is mounted.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if h.err != nil {
		h.log.Error("dashboard misconfigured", "err", h.err)
		http.Error(w, "dashboard misconfigured: see the application's log", http.StatusInternalServerError)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/")
	if name, ok := strings.CutPrefix(p, "actions/"); ok {
		h.action(w, r, name)
		return
	}
	if name, ok := strings.CutPrefix(p, "assets/"); ok {
		h.asset(w, r, name)
		return
	}
	page, ok := h.routes[p]
	if !ok {
		h.renderError(w, r, http.StatusNotFound, fmt.Sprintf("No page %q here.", p))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.renderError(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s not allowed here: pages are read with GET.", r.Method))
		return
	}
	if p == "" && h.addSlash(w, r) {
		return
	}
	page(w, r)
}

// checkClient says why rdb cannot be used: nil, or a *redis.Ring, which
// would split a queue between shards.
func checkClient(rdb redis.UniversalClient) error {
	switch c := rdb.(type) {
	case nil:
		return errors.New("nil Redis client")
	case *redis.Client:
		if c == nil {
			return errors.New("nil *redis.Client")
		}
	case *redis.ClusterClient:
		if c == nil {
			return errors.New("nil *redis.ClusterClient")
		}
	case *redis.Ring:
		return errors.New("a *redis.Ring cannot hold queues: it splits a queue's keys between shards")
	}
	return nil
}
