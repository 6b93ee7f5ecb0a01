package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// signer signs what the dashboard hands to browsers and checks it when it
// comes back: anti-forgery tokens and flash messages. Each purpose has its
// own MACs, so a value signed for one is never valid for another.
type signer struct {
	key []byte
}

// Purposes of a MAC.
const (
	purposeToken  = "csrf-token"
	purposeFlash  = "flash"
	purposeCookie = "cookie-name"
)

// maxToken bounds a token read from a request, in bytes: a token this
// signer makes is 70.
const maxToken = 128

// newSecret returns a random key for a handler made without WithSecret.
func newSecret() []byte {
	b := make([]byte, MinSecretLen)
	_, _ = rand.Read(b) // never fails: it crashes the program rather than return weak bytes
	return b
}

// mac is the HMAC-SHA256 of msg for purpose.
func (s signer) mac(purpose, msg string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// sign returns msg's MAC for purpose as text.
func (s signer) sign(purpose, msg string) string {
	return base64.RawURLEncoding.EncodeToString(s.mac(purpose, msg))
}

// verify reports whether sig is msg's MAC for purpose, in constant time.
func (s signer) verify(purpose, msg, sig string) bool {
	got, err := base64.RawURLEncoding.DecodeString(sig)
	return err == nil && hmac.Equal(got, s.mac(purpose, msg))
}

// newToken returns a fresh anti-forgery token: 128 random bits and their
// MAC, "nonce.mac".
func (s signer) newToken() string {
	nonce := rand.Text()
	return nonce + "." + s.sign(purposeToken, nonce)
}

// validToken reports whether tok is a token made by newToken with this
// key.
func (s signer) validToken(tok string) bool {
	if len(tok) > maxToken {
		return false
	}
	nonce, sig, ok := strings.Cut(tok, ".")
	return ok && nonce != "" && s.verify(purposeToken, nonce, sig)
}

// cookieName is the name of the cookie that holds the token: it depends
// on the key, so that two dashboards with different keys on one host do
// not overwrite each other's cookie, and replicas sharing a key share it.
func (s signer) cookieName() string {
	return "redelay_csrf_" + hex.EncodeToString(s.mac(purposeCookie, ""))[:12]
}
