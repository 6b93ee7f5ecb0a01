package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// hostileValue is a value a producer may store whose text as indented
// JSON is far larger than its encoding.
type hostileValue struct {
	name  string
	codec codec.Codec
	value any
	says  string // what get shows of it: how it was cut, or why it was not decoded
}

// hostileValues are small payloads nested thousands of levels deep (the
// indented JSON of each is tens of megabytes) and a wide one at the
// depth values are written to (60,000 numbers, one per line behind 200
// spaces of indentation).
func hostileValues() []hostileValue {
	deep := "nested more than 1000 levels deep"
	return []hostileValue{
		{name: "msgpack-6000", codec: codec.Msgpack(), value: redistest.Nested(6000, 1), says: deep},
		{name: "msgpack-10000", codec: codec.Msgpack(), value: redistest.Nested(10000, 1), says: deep},
		{name: "json-9000", codec: codec.JSON(), value: redistest.Nested(9000, 1), says: deep},
		{name: "msgpack-500", codec: codec.Msgpack(), value: redistest.Nested(500, 1), says: "nested deeper than 100 levels"},
		{name: "msgpack-wide", codec: codec.Msgpack(), value: redistest.Nested(99, make([]any, 60000)), says: "cut at "},
	}
}

// A small payload whose indented JSON is huge costs get and ls a small
// multiple of its size, in output and in memory, and get says what it
// left out.
func TestHostileValueBounded(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		for _, c := range hostileValues() {
			t.Run(c.name, func(t *testing.T) {
				b, err := c.codec.Marshal(c.value)
				if err != nil {
					t.Fatal(err)
				}
				size := len(b)
				name := seedtest.OfferAnnounced(t, rdb, goldenName("hostile"), c.codec, "hostile", c.value)
				small := seedtest.OfferAnnounced(t, rdb, goldenName("hostile"), c.codec, "hostile", 1)

				// The command: its output (-o json holds the payload in
				// base64 too).
				limit := 64<<10 + 2*max(minValueText, 8*size)
				for _, args := range [][]string{
					{"get", name, "hostile"},
					{"get", name, "hostile", "-o", "json"},
					{"ls", name, "-s", "delayed"},
					{"ls", name, "-s", "delayed", "-o", "json"},
				} {
					r := cli(t, with(conn, args...)...)
					what := strings.Join(append(args[:1:1], args[2:]...), " ")
					if r.code != 0 {
						t.Fatalf("%s: %.2000s", what, r)
					}
					t.Logf("%s: %d bytes of output; payload %d bytes", what, len(r.stdout), size)
					if len(r.stdout) > limit {
						t.Errorf("%s: %d bytes of output, want at most %d", what, len(r.stdout), limit)
					}
					if args[0] == "get" && !strings.Contains(r.stdout, c.says) {
						t.Errorf("%s does not say %q", what, c.says)
					}
				}

				// The same work in this process: its memory.
				ctx := context.Background()
				in := inspect.New(rdb)
				budget := uint64(max(minValueText, 8*size))
				for _, w := range []struct {
					what  string
					write func(it inspect.Item) error
					text  uint64 // the bound of the value's text
				}{
					{"get", func(it inspect.Item) error { return writeItem(io.Discard, name, it) }, budget},
					{"get -o json", func(it inspect.Item) error { return writeJSON(io.Discard, newItemJSON(it)) }, budget},
					{"ls", func(it inspect.Item) error { return writeItemsTable(io.Discard, []inspect.Item{it}, itemColumns{}) }, 4 * payloadWidth},
				} {
					cost := func(queue string) uint64 {
						var err error
						n := redistest.Allocated(func() {
							var it inspect.Item
							if it, err = in.Get(ctx, queue, "hostile"); err == nil {
								err = w.write(it)
							}
						})
						if err != nil {
							t.Fatal(err)
						}
						return n
					}
					base, n := cost(small), cost(name)
					t.Logf("%s: %d bytes allocated (%d for a small value)", w.what, n, base)
					// As on the dashboard's pages (see its test).
					if limit := base + 50*uint64(size) + 16*w.text + 64<<10; n > limit {
						t.Errorf("%s: %d bytes allocated, want at most %d (a small value's %d + 50 × the payload's %d + 16 × the text's bound %d + 64 KiB)",
							w.what, n, limit, base, size, w.text)
					}
				}
			})
		}
	})
}
