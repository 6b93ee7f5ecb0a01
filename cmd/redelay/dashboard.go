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
}

// dashboardCommand returns the dashboard command.
func (a *app) dashboardCommand() *cobra.Command {
	var f dashboardFlags
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the web dashboard",
		Long: `Serve the web dashboard of the queues at --listen until Ctrl-C, and print its
address on stderr once listening ("dashboard: http://127.0.0.1:8080/"). The
dashboard has no authentication of its own: it listens on the loopback
interface by default, and warns when told to listen beyond it. --read-only
shows queues and items without any button that changes them. Each action taken
through the dashboard is logged on stderr.

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
	return cmd
}

// serveDashboard serves the dashboard as f says until Ctrl-C or SIGTERM,
// then lets the requests under way finish.
func (a *app) serveDashboard(cmd *cobra.Command, f dashboardFlags) error {
	if _, err := checkListen(f.listen); err != nil {
		return err
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
	opts := []dashboard.Option{dashboard.WithLogger(slog.New(slog.NewTextHandler(errOut, nil))),
		dashboard.WithPrefix(a.flags.prefix)}
	if f.readOnly {
		opts = append(opts, dashboard.ReadOnly())
	}
	srv := &http.Server{
		Handler:           dashboard.New(rdb, opts...),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.NewTextHandler(errOut, nil), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	if !isLoopback(ln.Addr()) {
		what := "see and change"
		if f.readOnly {
			what = "see"
		}
		fmt.Fprintf(errOut, "dashboard: warning: listening on %s, beyond this machine, with no authentication: whoever reaches it can %s the queues\n", addr, what)
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
