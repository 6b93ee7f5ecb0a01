package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/spf13/cobra"
)

// defaultRedisURL is the server the commands talk to when neither --redis,
// REDIS_URL nor --cluster says otherwise.
const defaultRedisURL = "redis://127.0.0.1:6379/0"

// redisURLEnv is the environment variable read when --redis is not given.
const redisURLEnv = "REDIS_URL"

// dialerRetries is how many times a client tries to open a connection
// before the command that needs it fails: go-redis's default, 5 tries 100
// ms apart for each of its retries of a command, keeps a user waiting
// seconds for "connection refused".
const dialerRetries = 1

// conn is an open client to the Redis deployment of the connection flags.
type conn struct {
	rdb redis.UniversalClient
	// name says where rdb connects, for messages, with any password
	// replaced by ***.
	name string
}

// Close closes the client.
func (c *conn) Close() error { return c.rdb.Close() }

// wrap adds to err, returned by a call through c, where it talked to,
// unless err is the library's own answer (no such queue or item, a bad
// argument), which does not depend on it. A timeout, of the context or
// of the connection (both are --timeout), is said as such, in place of
// the bare "context deadline exceeded" or "read tcp ...: i/o timeout".
func (c *conn) wrap(err error, timeoutFlag string) error {
	switch {
	case err == nil:
		return nil
	case isAnswer(err):
		return err
	case isTimeout(err):
		return fmt.Errorf("%w (Redis at %s)", timedOut(err, "no answer from Redis within --timeout "+timeoutFlag), c.name)
	default:
		return fmt.Errorf("%w (Redis at %s)", err, c.name)
	}
}

// isTimeout reports whether err is a deadline that passed: the
// context's, or a connection's (a net.Error that says Timeout).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// timedOut returns err, a timeout, with what it says of the timeout
// replaced by says: the text of the outermost error in its chain that is
// itself the timeout ("read tcp a->b: i/o timeout", "context deadline
// exceeded"), when err's message ends with it; else says is appended.
func timedOut(err error, says string) error {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		ne, isNet := e.(net.Error)
		if e != context.DeadlineExceeded && (!isNet || !ne.Timeout()) {
			continue
		}
		if cut, ok := strings.CutSuffix(msg, e.Error()); ok {
			return &retold{err: err, msg: cut + says}
		}
		break
	}
	return &retold{err: err, msg: msg + ": " + says}
}

// redisURL returns the URL of --redis, else of REDIS_URL, else the
// default, and whether one of the first two gave it.
func (a *app) redisURL(cmd *cobra.Command) (raw string, given bool) {
	if f := cmd.Flags().Lookup("redis"); f != nil && f.Changed {
		return a.flags.redisURL, true
	}
	if env := a.getenv(redisURLEnv); env != "" {
		return env, true
	}
	return defaultRedisURL, false
}

// connect opens a client as the connection flags say: a *redis.Client for
// the --redis URL, or a *redis.ClusterClient for the --cluster addresses,
// which takes the username, password and TLS settings (not the host) of
// the --redis URL when one is given too. Its dial, read and write
// timeouts are --timeout, which also bounds each command's calls (a
// context): go-redis's own, 5 s to dial and 3 s to read, would cut a
// longer --timeout short. It makes no network call. A
// URL or address that cannot be read is a usage error, named with its
// password replaced by ***.
func (a *app) connect(cmd *cobra.Command) (*conn, error) {
	raw, given := a.redisURL(cmd)
	var opt *redis.Options
	if given || a.flags.cluster == "" {
		var err error
		if opt, err = redis.ParseURL(raw); err != nil {
			// The parser's message may quote the whole URL.
			msg := strings.ReplaceAll(err.Error(), raw, redactURL(raw))
			return nil, usageErrorf("bad Redis URL %s: %s", redactURL(raw), msg)
		}
	}
	if a.flags.cluster == "" {
		opt.ContextTimeoutEnabled = true
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = a.flags.timeout, a.flags.timeout, a.flags.timeout
		opt.MaintNotificationsConfig = noMaintNotifications()
		opt.DialerRetries = dialerRetries
		return &conn{rdb: redis.NewClient(opt), name: redactURL(raw)}, nil
	}
	addrs, err := clusterAddrs(a.flags.cluster)
	if err != nil {
		return nil, err
	}
	copt := &redis.ClusterOptions{
		Addrs:                    addrs,
		ContextTimeoutEnabled:    true,
		DialTimeout:              a.flags.timeout,
		ReadTimeout:              a.flags.timeout,
		WriteTimeout:             a.flags.timeout,
		DialerRetries:            dialerRetries,
		MaintNotificationsConfig: noMaintNotifications(),
	}
	name := "cluster " + strings.Join(addrs, ",")
	if opt != nil {
		if opt.Network != "tcp" {
			return nil, usageErrorf("--cluster takes its credentials from a redis:// or rediss:// URL, not %s", redactURL(raw))
		}
		if opt.DB != 0 {
			return nil, usageErrorf("--cluster: a Redis Cluster has only database 0, and the Redis URL %s names database %d", redactURL(raw), opt.DB)
		}
		copt.Username, copt.Password = opt.Username, opt.Password
		if opt.TLSConfig != nil {
			// Each node is verified under its own host name, which the
			// dialer fills in when ServerName is empty.
			copt.TLSConfig = opt.TLSConfig.Clone()
			copt.TLSConfig.ServerName = ""
			name = "tls " + name
		}
		if opt.Username != "" {
			name += " as " + opt.Username
		}
	}
	return &conn{rdb: redis.NewClusterClient(copt), name: name}, nil
}

// clusterAddrs splits the --cluster list of host:port addresses.
func clusterAddrs(list string) ([]string, error) {
	var addrs []string
	for _, addr := range strings.Split(list, ",") {
		addr = strings.TrimSpace(addr)
		if addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			return nil, usageErrorf("--cluster: bad address %q: want host:port", addr)
		}
		addrs = append(addrs, addr)
	}
	if len(addrs) == 0 {
		return nil, usageErrorf("--cluster: no address: want host:port[,host:port...]")
	}
	return addrs, nil
}

// noMaintNotifications turns off go-redis's maintenance notifications, a
// Redis Enterprise feature: a client would otherwise ask every server for
// them, and log when it does not have them.
func noMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// userinfoPassword matches the password in the userinfo of a URL
// anywhere in a text: the scheme, "://", the username and ":" are group 1.
var userinfoPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@]*@`)

// secretParam matches a query parameter whose name says it holds a
// secret (password, sentinel_password, pwd, token, auth, secret, key;
// in any case): group 1 is the separator before it, its name and "=",
// group 2 its value, as written.
var secretParam = regexp.MustCompile(`(?i)([?&;][^?&;=#\s]*(?:pass|pwd|secret|token|auth|key|credential)[^?&;=#\s]*=)([^&;#\s]*)`)

// urlToken matches what looks like a URL in a message, up to white space
// or a quote.
var urlToken = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]*`)

// redactURL returns raw with the password of its userinfo, and the value
// of every query parameter named like a secret (secretParam), replaced by
// "***" ("redis://user:***@host:6379/0", "redis://host/0?password=***").
// raw need not be a valid URL; a URL without a password comes back as it
// is.
func redactURL(raw string) string {
	if user, pass, ok := splitUserinfo(raw); ok {
		start := strings.Index(raw, "://")
		if start < 0 {
			start = 0
		} else {
			start += len("://")
		}
		at := start + len(user) + 1 + len(pass)
		raw = raw[:start] + user + ":***" + raw[at:]
	}
	q := strings.Index(raw, "?")
	if q < 0 {
		return raw
	}
	return raw[:q] + secretParam.ReplaceAllString(raw[q:], "${1}***")
}

// querySecrets returns the values of the query parameters of raw named
// like a secret (secretParam), as written and unescaped.
func querySecrets(raw string) []string {
	if _, _, ok := splitUserinfo(raw); ok {
		raw = raw[strings.LastIndex(raw, "@"):]
	}
	q := strings.Index(raw, "?")
	if q < 0 {
		return nil
	}
	var out []string
	for _, m := range secretParam.FindAllStringSubmatch(raw[q:], -1) {
		if v := m[2]; v != "" {
			out = append(out, v)
			if u, err := url.QueryUnescape(v); err == nil && u != v {
				out = append(out, u)
			}
		}
	}
	return out
}

// splitUserinfo returns the username and the password of the URL raw as
// written in it (still escaped), and whether it has a password. It reads
// the userinfo as everything up to the last "@", so a password with an
// unescaped "@" or "/" is still found (the host may be hidden with it).
func splitUserinfo(raw string) (user, pass string, ok bool) {
	rest := raw
	if i := strings.Index(raw, "://"); i >= 0 {
		rest = raw[i+len("://"):]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return "", "", false
	}
	return strings.Cut(rest[:at], ":")
}

// secrets returns the passwords that must never be printed: those of the
// --redis URL and of REDIS_URL, in the userinfo or a query parameter, as
// written and unescaped, longest first.
func (a *app) secrets() []string {
	var out []string
	for _, raw := range []string{a.flags.redisURL, a.getenv(redisURLEnv)} {
		out = append(out, querySecrets(raw)...)
		_, pass, ok := splitUserinfo(raw)
		if !ok || pass == "" {
			continue
		}
		out = append(out, pass)
		if p, err := url.PathUnescape(pass); err == nil && p != pass {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(x, y string) int { return len(y) - len(x) })
	return out
}

// redact returns msg with every URL's password (of its userinfo or a
// query parameter) and every password of the connection settings
// replaced by "***": every message the command prints about its
// connection passes through it.
func (a *app) redact(msg string) string {
	msg = userinfoPassword.ReplaceAllString(msg, "${1}***@")
	for _, s := range a.secrets() {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	return urlToken.ReplaceAllStringFunc(msg, func(u string) string {
		// Punctuation after a URL in a sentence is not part of its
		// last parameter's value.
		trimmed := strings.TrimRight(u, ":,.;)]")
		return redactURL(trimmed) + u[len(trimmed):]
	})
}

// silentLog is a go-redis logger that logs nothing.
type silentLog struct{}

// Printf logs nothing.
func (silentLog) Printf(context.Context, string, ...any) {}
