package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// Hostile IDs, headers, errors, schedule names and values, as producers
// and failing handlers may store them: each table shows them escaped,
// never as bytes that drive the operator's terminal or break a table.
var hostileIDs = []string{
	"esc\x1b[2J\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07",
	"cr\rfake",
	"nl\nrow",
	"ff\xffbad",
	"bidi\u202eevil",
	"c1\u009b31m",
}

// terminalSafe says what in out a terminal would act on, or "" when
// nothing: a control character other than a newline (C0, DEL, C1), a
// bidirectional override, or bytes that are not UTF-8. A table may not
// hold a tab either: text/tabwriter passes tabs through when an
// escape byte (0xff) in a cell switched its alignment off.
func terminalSafe(out string) string {
	if !utf8.ValidString(out) {
		return "bytes that are not UTF-8"
	}
	for _, r := range out {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return fmt.Sprintf("control character %U", r)
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return "bidirectional override"
		}
	}
	return ""
}

func TestHostileTextEscaped(t *testing.T) {
	rdb := redistest.Standalone(t)
	conn := connFlags(t, rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := goldenName("hostile")
	q := blocking.New[parcel](rdb, name, blocking.WithMaxAttempts(1))
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close() })
	evil := "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[31mred\r\u202e"
	for _, id := range hostileIDs {
		if _, err := dq.OfferAt(ctx, parcel{SKU: id, Note: evil}, fixtureDue, delayed.WithID(id),
			delayed.WithHeaders(map[string]string{"h" + evil: evil + "\nsecond line" + evil})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Offer(ctx, parcel{SKU: "dead"}, blocking.WithID("dead"+evil)); err != nil {
		t.Fatal(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Nack(ctx, 0, blocking.WithReason(errors.New("remote said: "+evil))); err != nil {
		t.Fatal(err)
	}
	if err := dq.Schedule(ctx, "nightly"+evil, "0 3 * * *", parcel{SKU: "s"}); err != nil {
		t.Fatal(err)
	}

	outputs := map[string]string{
		"ls delayed": ok(t, with(conn, "ls", name, "-s", "delayed")...),
		"ls dead":    ok(t, with(conn, "ls", name, "-s", "dead")...),
		"schedules":  ok(t, with(conn, "schedules", name)...),
	}
	for _, id := range append(hostileIDs, "dead"+evil) {
		outputs[fmt.Sprintf("get %q", id)] = ok(t, with(conn, "get", name, id)...)
	}
	for what, out := range outputs {
		if bad := terminalSafe(out); bad != "" {
			t.Errorf("%s prints %s:\n%q", what, bad, out)
		}
	}
	// Escaped the way Go writes them, so the operator sees what is there.
	for _, want := range []string{`esc\x1b[2J\x1b]8;;http://evil.example/\alink`, `cr\rfake`, `nl\nrow`, `ff\xffbad`, `bidi\u202eevil`, `c1\u009b31m`} {
		if !strings.Contains(outputs["ls delayed"], want) {
			t.Errorf("ls shows no %s:\n%s", want, outputs["ls delayed"])
		}
	}
	if !strings.Contains(outputs["ls dead"], `remote said: \x1b]52;c;`) {
		t.Errorf("ls -s dead does not show the error escaped:\n%s", outputs["ls dead"])
	}
	// Every row of the table starts its second column at the same place.
	lines := strings.Split(strings.TrimSuffix(outputs["ls delayed"], "\n"), "\n")
	col := strings.Index(lines[0], "ATTEMPT")
	for _, l := range lines[1:] {
		if len(l) < col+1 || l[col-2:col] != "  " || l[col] == ' ' {
			t.Errorf("row not aligned with ATTEMPT at %d: %q", col, l)
		}
	}

	// -o json keeps every ID usable: one that is not UTF-8 also comes as
	// id_base64, its exact bytes, which get accepts back.
	var items []struct {
		ID       string `json:"id"`
		IDBase64 []byte `json:"id_base64"`
	}
	decode(t, ok(t, with(conn, "ls", name, "-s", "delayed", "-o", "json")...), &items)
	found := 0
	for _, it := range items {
		switch {
		case utf8.ValidString(it.ID) && it.IDBase64 == nil:
		case string(it.IDBase64) == "ff\xffbad":
			found++
			var back struct {
				ID []byte `json:"id_base64"`
			}
			decode(t, ok(t, with(conn, "get", name, string(it.IDBase64), "-o", "json")...), &back)
			if string(back.ID) != "ff\xffbad" {
				t.Errorf("get -o json of the ID from id_base64: id_base64 %q", back.ID)
			}
		default:
			t.Errorf("ls -o json item id %q, id_base64 %q", it.ID, it.IDBase64)
		}
	}
	if found != 1 {
		t.Errorf("ls -o json: %d items with id_base64 ff\\xffbad, want 1", found)
	}
}
