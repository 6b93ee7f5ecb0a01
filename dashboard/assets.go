package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"time"
)

//go:embed assets
var assetFS embed.FS

// asset is one embedded file the pages load.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// loadAssets reads the embedded assets, by file name.
func loadAssets() map[string]asset {
	out := map[string]asset{}
	types := map[string]string{
		".css": "text/css; charset=utf-8",
		".js":  "text/javascript; charset=utf-8",
	}
	entries, _ := fs.ReadDir(assetFS, "assets") // embedded: cannot fail
	for _, e := range entries {
		b, err := assetFS.ReadFile("assets/" + e.Name())
		if err != nil || e.IsDir() {
			continue
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = asset{
			body:        b,
			contentType: types[path.Ext(e.Name())],
			etag:        `"` + hex.EncodeToString(sum[:8]) + `"`,
		}
	}
	return out
}

// asset answers an embedded asset, revalidated by its ETag.
func (h *handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := h.assets[name]
	if !ok || a.contentType == "" {
		h.renderError(w, r, http.StatusNotFound, "No such asset.")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.renderError(w, r, http.StatusMethodNotAllowed, "Assets are read with GET.")
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
