package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/netip"
	"strings"
)

// The environment variables that hold the dashboard's credentials. They
// are never flags: a flag's value stays in shell history and shows in ps.
const (
	dashboardUserEnv     = "REDELAY_DASHBOARD_USER"     // basic authentication, with the password
	dashboardPasswordEnv = "REDELAY_DASHBOARD_PASSWORD" // basic authentication, with the user
	dashboardTokenEnv    = "REDELAY_DASHBOARD_TOKEN"    // Authorization: Bearer TOKEN
)

// authRealm names the dashboard in the challenges of its 401 answers.
const authRealm = "redelay dashboard"

// credentials are what a request to the dashboard must carry: a user and
// a password (HTTP basic authentication), a bearer token, or either; none
// when nothing is set.
type credentials struct {
	user, password, token string
}

// basic reports whether a user and password are set.
func (c credentials) basic() bool { return c.user != "" }

// bearer reports whether a token is set.
func (c credentials) bearer() bool { return c.token != "" }

// set reports whether any credential is set.
func (c credentials) set() bool { return c.basic() || c.bearer() }

// describe says, for the log, which credentials a request needs, by the
// variables that hold them (never their values).
func (c credentials) describe() string {
	var kinds []string
	if c.basic() {
		kinds = append(kinds, "the user and password of "+dashboardUserEnv+" and "+dashboardPasswordEnv+" (basic authentication)")
	}
	if c.bearer() {
		kinds = append(kinds, "the bearer token of "+dashboardTokenEnv)
	}
	return strings.Join(kinds, ", or ")
}

// dashboardCredentials reads the credentials from the environment. A user
// without a password, or a password without a user, is a usage error.
func (a *app) dashboardCredentials() (credentials, error) {
	c := credentials{
		user:     a.getenv(dashboardUserEnv),
		password: a.getenv(dashboardPasswordEnv),
		token:    a.getenv(dashboardTokenEnv),
	}
	switch {
	case c.user != "" && c.password == "":
		return credentials{}, usageErrorf("%s is set without %s: basic authentication needs both", dashboardUserEnv, dashboardPasswordEnv)
	case c.user == "" && c.password != "":
		return credentials{}, usageErrorf("%s is set without %s: basic authentication needs both", dashboardPasswordEnv, dashboardUserEnv)
	}
	return c, nil
}

// isLoopbackHost reports whether the host of a --listen address is on
// the loopback interface only: an address of 127.0.0.0/8 or ::1 (an
// IPv4-mapped one too), or the name localhost. Any other name, and ""
// (every interface), is not: where a name resolves is not known until
// the listener exists, and then serveDashboard checks its address too.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.WithZone("").Unmap().IsLoopback()
}

// requireAuth returns next behind the credentials c, which must be set:
// a request that does not carry them gets 401, with a challenge for each
// kind of credential set (Basic, which makes a browser ask for them, and
// Bearer). Each credential is compared in constant time, through its
// SHA-256 digest, so that neither its bytes nor its length leak through
// how long an answer takes.
func requireAuth(next http.Handler, c credentials) http.Handler {
	h := &authHandler{next: next, basic: c.basic(), bearer: c.bearer()}
	h.user, h.password, h.token = sha256.Sum256([]byte(c.user)), sha256.Sum256([]byte(c.password)), sha256.Sum256([]byte(c.token))
	return h
}

// authHandler is the handler of requireAuth.
type authHandler struct {
	next                  http.Handler
	basic, bearer         bool
	user, password, token [sha256.Size]byte
}

// ServeHTTP serves r when it carries the credentials, else answers 401.
func (h *authHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.allowed(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	if h.basic {
		w.Header().Add("WWW-Authenticate", `Basic realm="`+authRealm+`", charset="UTF-8"`)
	}
	if h.bearer {
		w.Header().Add("WWW-Authenticate", `Bearer realm="`+authRealm+`"`)
	}
	http.Error(w, "401 Unauthorized: the dashboard needs credentials", http.StatusUnauthorized)
}

// allowed reports whether r carries a set credential.
func (h *authHandler) allowed(r *http.Request) bool {
	if h.basic {
		if user, password, ok := r.BasicAuth(); ok {
			u := sha256.Sum256([]byte(user))
			p := sha256.Sum256([]byte(password))
			// Both compared, whatever the first gives.
			if subtle.ConstantTimeCompare(u[:], h.user[:])&subtle.ConstantTimeCompare(p[:], h.password[:]) == 1 {
				return true
			}
		}
	}
	if h.bearer {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			t := sha256.Sum256([]byte(strings.TrimSpace(token)))
			if subtle.ConstantTimeCompare(t[:], h.token[:]) == 1 {
				return true
			}
		}
	}
	return false
}
