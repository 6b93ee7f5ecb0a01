package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redelay/redelay/dashboard"
)

// shutdownTimeout bounds how long the dashboard waits for the requests
// under way when it is stopped.
const shutdownTimeout = 5 * time.Second

// dashboardFlags are the flags of the dashboard command.
type dashboardFlags struct {
	listen   string
	readOnly bool
	demo     bool
	insecure bool
}

// dashboardCommand returns the dashboard command.
func (a *app) dashboardCommand() *cobra.Command {
	var f dashboardFlags
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the web dashboard",
		Long: `Serve the web dashboard of the queues at --listen until Ctrl-C, and print its
address on stderr once listening ("dashboard: http://127.0.0.1:8080/").
--read-only shows queues and items without any button that changes them. Each
action taken through the dashboard is logged on stderr.

Credentials come from the environment, never from flags (shell history and ps
show those): REDELAY_DASHBOARD_USER and REDELAY_DASHBOARD_PASSWORD for HTTP
basic authentication (a browser asks for them), REDELAY_DASHBOARD_TOKEN for a
bearer token (Authorization: Bearer TOKEN, for scripts and proxies). When any
is set, a request without them gets 401, on any address. The dashboard listens
on the loopback interface by default; on an address beyond it (anything but
127.0.0.0/8, ::1 and localhost: 0.0.0.0, :8080 and [::] are every interface)
it refuses to start without credentials, unless --insecure lets whoever
reaches it in. It serves plain HTTP: beyond this machine, put a proxy with TLS
in front.

--demo ignores --redis and --cluster: it starts an embedded Redis with a few
queues and live traffic (orders falling due, emails failing and retried, a
report scheduled every 5 seconds, paused invoices), to try the dashboard with
nothing installed. It all goes away on exit.`,
		Args: exactArgs(),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return a.serveDashboard(cmd, f)
		}),
	}
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on, host:port (port 0 picks a free one)")
	cmd.Flags().BoolVar(&f.readOnly, "read-only", false, "show queues and items, change nothing")
	cmd.Flags().BoolVar(&f.demo, "demo", false, "serve demo queues from an embedded Redis, ignoring --redis and --cluster")
	cmd.Flags().BoolVar(&f.insecure, "insecure", false, "serve beyond the loopback interface without credentials: whoever reaches it gets in")
	return cmd
}

// serveDashboard serves the dashboard as f says until Ctrl-C or SIGTERM,
// then lets the requests under way finish.
func (a *app) serveDashboard(cmd *cobra.Command, f dashboardFlags) error {
	host, err := checkListen(f.listen)
	if err != nil {
		return err
	}
	creds, err := a.dashboardCredentials()
	if err != nil {
		return err
	}
	if !creds.set() && !f.insecure && !isLoopbackHost(host) {
		return exposedError(f.listen)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errOut := redactingWriter{w: cmd.ErrOrStderr(), a: a}
	var rdb redis.UniversalClient
	if f.demo {
		if cmd.Flags().Changed("redis") || cmd.Flags().Changed("cluster") {
			fmt.Fprintln(errOut, "dashboard: --demo: ignoring --redis and --cluster")
		}
		d, err := startDemo(ctx)
		if err != nil {
			return err
		}
		defer d.Stop()
		rdb = d.Client()
	} else {
		c, err := a.connect(cmd)
		if err != nil {
			return err
		}
		defer c.Close()
		pctx, cancel := context.WithTimeout(ctx, a.flags.timeout)
		err = c.rdb.Ping(pctx).Err()
		cancel()
		if err != nil {
			return c.wrap(fmt.Errorf("dashboard: %w", err), a.flags.timeout.String())
		}
		rdb = c.rdb
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.listen)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	if !creds.set() && !f.insecure && !isLoopback(ln.Addr()) {
		// A host name that resolved beyond loopback.
		ln.Close()
		return exposedError(f.listen)
	}
	opts := []dashboard.Option{dashboard.WithLogger(slog.New(slog.NewTextHandler(errOut, nil))),
		dashboard.WithPrefix(a.flags.prefix)}
	if f.readOnly {
		opts = append(opts, dashboard.ReadOnly())
	}
	var handler http.Handler = dashboard.New(rdb, opts...)
	if creds.set() {
		handler = requireAuth(handler, creds)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.NewTextHandler(errOut, nil), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	switch {
	case creds.set():
		fmt.Fprintf(errOut, "dashboard: every request needs %s\n", creds.describe())
		if !isLoopback(ln.Addr()) {
			fmt.Fprintf(errOut, "dashboard: note: listening on %s, beyond this machine, in plain HTTP: put a proxy with TLS in front, or the credentials cross the network in clear\n", addr)
		}
	case !isLoopback(ln.Addr()):
		what := "see and change"
		if f.readOnly {
			what = "see"
		}
		fmt.Fprintf(errOut, "dashboard: warning: listening on %s, beyond this machine, with no authentication (--insecure): whoever reaches it can %s the queues\n", addr, what)
	}
	fmt.Fprintf(errOut, "dashboard: http://%s/\n", addr)
	select {
	case err := <-served:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("dashboard: stopping: %w", err)
	}
	return nil
}

// exposedError is the usage error of a dashboard told to listen beyond
// the loopback interface with no credentials and no --insecure.
func exposedError(listen string) error {
	return usageErrorf("dashboard: --listen %q is beyond the loopback interface, and no credentials are set: "+
		"set %s and %s (basic authentication) or %s (a bearer token) in the environment, or give --insecure to let whoever reaches it in",
		listen, dashboardUserEnv, dashboardPasswordEnv, dashboardTokenEnv)
}

// isLoopback reports whether addr is on the loopback interface only.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// redactingWriter writes to w with every password replaced by *** (see
// app.redact): the dashboard's logs go through it.
type redactingWriter struct {
	w io.Writer
	a *app
}

// Write writes p redacted, and reports all of p written when it was.
func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.a.redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// hostName matches a DNS host name: labels of letters, digits and
// hyphens, not starting or ending with a hyphen, dot-separated.
var hostName = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.?$`)

// checkListen reads the --listen address, host:port, and returns its
// host: "" (every interface), an IP address or a host name. One that
// cannot be listened on as written is a usage error.
func checkListen(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", usageErrorf("--listen %q: want host:port (127.0.0.1:8080, [::1]:8080, localhost:0)", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", usageErrorf("--listen %q: port %s: want 0 to 65535", addr, port)
	}
	if _, err := netip.ParseAddr(host); host != "" && err != nil && !hostName.MatchString(host) {
		return "", usageErrorf("--listen %q: host %q: want an IP address or a host name", addr, host)
	}
	return host, nil
}
