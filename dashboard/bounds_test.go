package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// hostileValue is a value a producer may store whose text as indented
// JSON is far larger than its encoding.
type hostileValue struct {
	name  string
	codec codec.Codec
	value any
	// says is what the pages show of it: how it was cut, or why it
	// was not decoded.
	list, item string
}

// hostileValues are small payloads nested thousands of levels deep (the
// indented JSON of each is tens of megabytes) and a wide one at the
// depth the dashboard writes (60,000 numbers, one per line behind 200
// spaces of indentation).
func hostileValues() []hostileValue {
	deep := "nested more than 1000 levels deep"
	return []hostileValue{
		{name: "msgpack-6000", codec: codec.Msgpack(), value: redistest.Nested(6000, 1), list: deep, item: deep},
		{name: "msgpack-10000", codec: codec.Msgpack(), value: redistest.Nested(10000, 1), list: deep, item: deep},
		{name: "json-9000", codec: codec.JSON(), value: redistest.Nested(9000, 1), list: deep, item: deep},
		{name: "msgpack-500", codec: codec.Msgpack(), value: redistest.Nested(500, 1),
			list: "cut at 2000 bytes", item: "nested deeper than 100 levels"},
		{name: "json-500", codec: codec.JSON(), value: redistest.Nested(500, 1),
			list: "cut at 2000 bytes", item: "nested deeper than 100 levels"},
		{name: "msgpack-wide", codec: codec.Msgpack(), value: redistest.Nested(99, make([]any, 60000)),
			list: "cut at 2000 bytes", item: "cut at 256 KiB"},
	}
}

// serve answers one GET of ref (relative to the root) with h, in this
// goroutine, and returns the response and the bytes allocated meanwhile.
func serve(t *testing.T, h http.Handler, ref string) (*httptest.ResponseRecorder, uint64) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/"+ref, nil)
	n := redistest.Allocated(func() { h.ServeHTTP(rec, req) })
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: status %d:\n%.2000s", ref, rec.Code, rec.Body.String())
	}
	return rec, n
}

// A small payload whose indented JSON is huge costs the queue page and
// the item page a small multiple of its size, in memory and in HTML, and
// each page says what it left out.
func TestHostileValueBounded(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		h := dashboard.New(rdb, dashboard.ReadOnly())
		for _, c := range hostileValues() {
			t.Run(c.name, func(t *testing.T) {
				name := seedtest.OfferAnnounced(t, rdb, redistest.QueueName(t), c.codec, "hostile", c.value)
				small := seedtest.OfferAnnounced(t, rdb, redistest.QueueName(t), c.codec, "hostile", 1) // what a page costs whatever its values
				size := payloadSize(t, c)

				for _, p := range []struct {
					page, ref, says string
					text            uint64 // the bound of the value's text on the page
				}{
					{"queue", "queue?q=", c.list, 2000},
					{"item", "item?id=hostile&q=", c.item, 256 << 10},
				} {
					_, base := serve(t, h, p.ref+url.QueryEscape(small))
					rec, n := serve(t, h, p.ref+url.QueryEscape(name))
					body := rec.Body.String()
					t.Logf("%s page: %d bytes allocated (%d for a small value), %d bytes of HTML; payload %d bytes",
						p.page, n, base, len(body), size)
					// The decode of a payload costs a few tens of bytes per
					// byte, its text a few times its bound; a value nested
					// 1,000 levels deep (the deepest decoded) costs 64 KiB
					// more to decode, which a payload of 1,000 bytes does not
					// cover at 50 bytes a byte.
					if limit := base + 50*uint64(size) + 16*p.text + 64<<10; n > limit {
						t.Errorf("%s page: %d bytes allocated, want at most %d (a small value's %d + 50 × the payload's %d + 16 × the text's bound %d + 64 KiB)",
							p.page, n, limit, base, size, p.text)
					}
					if limit := 64<<10 + 2*p.text; uint64(len(body)) > limit {
						t.Errorf("%s page: %d bytes of HTML, want at most %d", p.page, len(body), limit)
					}
					if !strings.Contains(body, p.says) {
						t.Errorf("%s page does not say %q", p.page, p.says)
					}
				}
			})
		}
	})
}

// payloadSize is the size of c's value as its codec stores it.
func payloadSize(t *testing.T, c hostileValue) int {
	t.Helper()
	b, err := c.codec.Marshal(c.value)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}
