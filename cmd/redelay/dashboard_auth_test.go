package main

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/redelay/redelay/internal/redistest"
)

// The dashboard refuses to listen beyond the loopback interface without
// credentials or --insecure, before it connects to Redis: exit 2, saying
// how to give them. Half a pair of basic credentials is refused on any
// address.
func TestDashboardRefusesExposure(t *testing.T) {
	const nowhere = "redis://127.0.0.1:1/0"
	for _, c := range []struct {
		env    []string
		args   []string
		stderr string
	}{
		{nil, []string{"--listen", "0.0.0.0:0"}, "REDELAY_DASHBOARD_USER and REDELAY_DASHBOARD_PASSWORD"},
		{nil, []string{"--listen", ":0"}, "REDELAY_DASHBOARD_TOKEN"},
		{nil, []string{"--listen", "[::]:0"}, "--insecure"},
		{nil, []string{"--listen", "192.0.2.1:0"}, `--listen "192.0.2.1:0" is beyond the loopback interface`},
		{nil, []string{"--listen", "example.com:0"}, `--listen "example.com:0" is beyond the loopback interface`},
		{nil, []string{"--demo", "--listen", "0.0.0.0:0"}, "--insecure"},
		{[]string{dashboardUserEnv + "=admin"}, []string{"--listen", "127.0.0.1:0"},
			"REDELAY_DASHBOARD_USER is set without REDELAY_DASHBOARD_PASSWORD"},
		{[]string{dashboardPasswordEnv + "=pw-9f3a"}, []string{"--listen", "0.0.0.0:0", "--insecure"},
			"REDELAY_DASHBOARD_PASSWORD is set without REDELAY_DASHBOARD_USER"},
	} {
		args := with([]string{"--redis", nowhere, "dashboard"}, c.args...)
		r := cliEnv(t, c.env, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.stderr) || strings.Contains(r.stderr, "pw-9f3a") {
			t.Errorf("redelay %q with %q: want exit 2 and %q, got %v", args, c.env, c.stderr, r)
		}
	}
}

// With credentials in the environment, every request without them gets
// 401 and a challenge, on any address; with them, the dashboard. Neither
// the password nor the token is ever printed. --insecure serves beyond
// loopback without credentials, with a warning (TestDashboardReadOnly).
func TestDashboardAuth(t *testing.T) {
	rdb := redistest.Standalone(t)
	name := fixture(t, rdb)
	const (
		user     = "ops"
		password = "pw-5e1b7c"
		token    = "tok-8d2f0a"
	)
	get := func(t *testing.T, url string, auth func(*http.Request)) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != nil {
			auth(req)
		}
		resp, err := newHTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	refused := func(t *testing.T, url, what string, auth func(*http.Request), challenge string) {
		t.Helper()
		resp, body := get(t, url, auth)
		if resp.StatusCode != http.StatusUnauthorized || !slices.ContainsFunc(resp.Header.Values("WWW-Authenticate"),
			func(v string) bool { return strings.HasPrefix(v, challenge) }) || strings.Contains(body, name) {
			t.Errorf("GET %s %s: %s, WWW-Authenticate %q; want 401 and a %s challenge", url, what, resp.Status,
				resp.Header.Values("WWW-Authenticate"), challenge)
		}
	}
	served := func(t *testing.T, url, what string, auth func(*http.Request)) {
		t.Helper()
		if resp, body := get(t, url, auth); resp.StatusCode != http.StatusOK || !strings.Contains(body, name) {
			t.Errorf("GET %s %s: %s, want 200 and the queue %s", url, what, resp.Status, name)
		}
	}
	noSecret := func(t *testing.T, printed string) {
		t.Helper()
		for _, s := range []string{password, token} {
			if strings.Contains(printed, s) {
				t.Errorf("the dashboard printed the secret %q:\n%s", s, printed)
			}
		}
	}

	t.Run("basic", func(t *testing.T) {
		env := []string{dashboardUserEnv + "=" + user, dashboardPasswordEnv + "=" + password}
		printed := serveEnv(t, env, with(connFlags(t, rdb), "dashboard", "--listen", "0.0.0.0:0"), func(url string, _ []string) {
			refused(t, url, "without credentials", nil, "Basic ")
			refused(t, url, "with a wrong password", basic(user, password+"x"), "Basic ")
			refused(t, url, "with a wrong user", basic(user+"x", password), "Basic ")
			refused(t, url, "with a bearer token", bearer(password), "Basic ")
			refused(t, url+"queue?q="+name, "without credentials", nil, "Basic ")
			served(t, url, "with the user and password", basic(user, password))
		})
		noSecret(t, printed)
	})
	t.Run("token", func(t *testing.T) {
		env := []string{dashboardTokenEnv + "=" + token}
		printed := serveEnv(t, env, with(connFlags(t, rdb), "dashboard", "--listen", "0.0.0.0:0"), func(url string, _ []string) {
			refused(t, url, "without credentials", nil, "Bearer ")
			refused(t, url, "with a wrong token", bearer(token+"x"), "Bearer ")
			refused(t, url, "with the token as a password", basic(user, token), "Bearer ")
			served(t, url, "with the token", bearer(token))
		})
		noSecret(t, printed)
	})
	t.Run("loopback", func(t *testing.T) {
		env := []string{dashboardUserEnv + "=" + user, dashboardPasswordEnv + "=" + password, dashboardTokenEnv + "=" + token}
		printed := serveEnv(t, env, with(connFlags(t, rdb), "dashboard", "--listen", "localhost:0"), func(url string, _ []string) {
			refused(t, url, "without credentials", nil, "Basic ")
			served(t, url, "with the user and password", basic(user, password))
			served(t, url, "with the token", bearer(token))
		})
		noSecret(t, printed)
	})
}
