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
	if q.DeadReady != q.Dead().Ready || q.DeadPrio != q.Dead().Prio {
		t.Fatalf("DeadReady %q, Dead().Ready %q; DeadPrio %q, Dead().Prio %q", q.DeadReady, q.Dead().Ready, q.DeadPrio, q.Dead().Prio)
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

func TestPartition(t *testing.T) {
	q, err := New("orders")
	if err != nil {
		t.Fatal(err)
	}
	if p := q.Partition(0); p != q {
		t.Fatalf("partition 0 is not the queue's own keys: %+v", p)
	}
	p := q.Partition(3)
	if p.Ready != "redelay:{orders{3}:ready" || p.Meta != "redelay:{orders{3}:meta" || p.Name != "orders" || p.Part != 3 {
		t.Fatalf("unexpected partition layout: %+v", p)
	}
	d := p.Dead()
	if d.Ready != "redelay:{orders{3}:dead:ready" || p.DeadReady != d.Ready || p.DeadPrio != d.Prio || d.Part != 3 {
		t.Fatalf("dead letters of a partition: %+v", d)
	}
}

func TestPartitionOf(t *testing.T) {
	const n, items = 8, 8000
	var counts [n]int
	for i := range items {
		id := strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i%5) + string(rune(i))
		p := PartitionOf(id, n)
		if p < 0 || p >= n || PartitionOf(id, n) != p {
			t.Fatalf("PartitionOf(%q) = %d, unstable or out of range", id, p)
		}
		counts[p]++
	}
	for i, c := range counts {
		if c < items/n/2 || c > items/n*2 {
			t.Errorf("partition %d got %d of %d ids: %v", i, c, items, counts)
		}
	}
	if PartitionOf("anything", 1) != 0 {
		t.Fatal("one partition: not 0")
	}
	// The mapping is stored format: pin it.
	if a, b := PartitionOf("order-42", 8), PartitionOf("order-42", 256); a != 4 || b != 244 {
		t.Fatalf("PartitionOf(order-42) = %d of 8, %d of 256; the stored mapping changed", a, b)
	}
}

func TestTickIDsRouteToPartitionZero(t *testing.T) {
	for _, id := range []string{
		"heartbeat@2026-12-01T20:49:49.000Z",
		"@2026-01-01T00:00:00.000Z",
		"a@b@2026-06-30T23:59:59.999Z",
		"nightly report ✓@2030-02-28T03:00:00.500Z",
	} {
		if !IsTickID(id) {
			t.Errorf("IsTickID(%q) = false", id)
		}
		for n := 2; n <= 256; n++ {
			if p := PartitionOf(id, n); p != 0 {
				t.Fatalf("PartitionOf(%q, %d) = %d, want 0", id, n, p)
			}
		}
	}
	for _, id := range []string{
		"",
		"Z",
		"2026-12-01T20:49:49.000Z",           // no '@'
		"s@2026-12-01T20:49:49Z",             // no milliseconds
		"s@2026-12-01T20:49:49.000",          // no Z
		"s@2026-12-01T20:49:49.000+01:00",    // not UTC
		"s@2026-13-01T20:49:49.000Z",         // month 13
		"s@2026-02-30T20:49:49.000Z",         // 30 February
		"s@2026-12-01 20:49:49.000Z",         // space for T
		"s@2026-12-01T20:49:49.000Zx",        // trailing byte
		"s#2026-12-01T20:49:49.000Z",         // '#' for '@'
		"s@\xff\xfe\x00-12-01T20:49:49.000Z", // bytes
	} {
		if IsTickID(id) {
			t.Errorf("IsTickID(%q) = true", id)
		}
	}
}
