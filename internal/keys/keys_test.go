package keys

import (
	"errors"
	"strings"
	"testing"
)

func TestLayout(t *testing.T) {
	q, err := New("orders")
	if err != nil {
		t.Fatal(err)
	}
	if q.Ready != "redelay:{orders}:ready" || q.Delayed != "redelay:{orders}:delayed" ||
		q.Items != "redelay:{orders}:items" || q.Seq != "redelay:{orders}:seq" ||
		q.Leases != "redelay:{orders}:leases" || q.Inflight != "redelay:{orders}:inflight" || q.Wake != "redelay:{orders}:wake" {
		t.Fatalf("unexpected layout: %+v", q)
	}
	if q.DeadReady != q.Dead().Ready {
		t.Fatalf("DeadReady %q, Dead().Ready %q", q.DeadReady, q.Dead().Ready)
	}
	d := q.Dead()
	if d.Ready != "redelay:{orders}:dead:ready" || d.Name != "orders:dead" || d.Wake != "redelay:{orders}:dead:wake" {
		t.Fatalf("unexpected child layout: %+v", d)
	}
}

func TestValidate(t *testing.T) {
	for _, ok := range []string{"orders", "a", "billing:retry", "名前", strings.Repeat("x", MaxNameLen)} {
		if err := Validate(ok); err != nil {
			t.Errorf("Validate(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a{b", "a}b", "a b", "tab\t", "nl\n", "\x7f", string([]byte{0xff}), strings.Repeat("x", MaxNameLen+1)} {
		if err := Validate(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Validate(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
}
