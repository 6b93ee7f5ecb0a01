package dashboard

import (
	"crypto/subtle"
	"errors"
	"net/http"
)

// csrfField is the hidden form field that carries the anti-forgery token.
const csrfField = "csrf"

// Why a POST is refused as a possible forgery.
var (
	errNoCookie     = errors.New("no anti-forgery cookie: load the page again and retry")
	errNoToken      = errors.New("no anti-forgery token in the form")
	errTokenMatch   = errors.New("the form's anti-forgery token does not match the cookie: load the page again and retry")
	errTokenInvalid = errors.New("anti-forgery token not issued by this dashboard: load the page again and retry")
)

// csrfToken returns the token to put in the forms of the page answering
// r: the one in r's cookie when this handler issued it, else a new one,
// set as the cookie on w (once: a second call returns the token set).
// Call it before writing the response's header.
func (h *handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(h.cookie); err == nil && h.sign.validToken(c.Value) {
		return c.Value
	}
	for _, line := range w.Header().Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(line); err == nil && c.Name == h.cookie {
			return c.Value
		}
	}
	tok := h.sign.newToken()
	http.SetCookie(w, &http.Cookie{
		Name:     h.cookie,
		Value:    tok,
		Path:     "/",
		HttpOnly: true,
		Secure:   isHTTPS(r),
		SameSite: http.SameSiteStrictMode,
	})
	return tok
}

// checkCSRF says why the POST r (its form parsed) may be a forgery: a
// cross-origin request (by its Sec-Fetch-Site or Origin header), no
// cookie, no token in the form, a token that differs from the cookie's
// (compared in constant time), or one this handler did not issue.
func (h *handler) checkCSRF(r *http.Request) error {
	if err := h.origin.Check(r); err != nil {
		return err
	}
	c, err := r.Cookie(h.cookie)
	if err != nil {
		return errNoCookie
	}
	form := r.PostForm.Get(csrfField)
	switch {
	case form == "":
		return errNoToken
	case subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) != 1:
		return errTokenMatch
	case !h.sign.validToken(c.Value):
		return errTokenInvalid
	}
	return nil
}

// isHTTPS reports whether the browser reached r over TLS: directly, or
// through a proxy that says so. It only decides whether the cookie is
// marked Secure.
func isHTTPS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}
