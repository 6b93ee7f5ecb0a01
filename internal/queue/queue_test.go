package queue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redelay/redelay/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Run(m) }

func TestChecks(t *testing.T) {
	for name, err := range map[string]error{
		"negative delay":  CheckDelay("delay", -time.Nanosecond),
		"delay past 2255": CheckDelay("delay", 240*365*24*time.Hour),
		"zero time":       CheckDue(time.Time{}),
		"before 1970":     CheckDue(time.Unix(-1, 0)),
		"after 2255":      CheckDue(MaxDue.Add(time.Microsecond)),
		"reserved header": CheckHeaders(map[string]string{"REDELAY-x": "v"}),
		"empty header":    CheckHeaders(map[string]string{"": "v"}),
		"long header":     CheckHeaders(map[string]string{strings.Repeat("k", MaxHeaderKey+1): "v"}),
	} {
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	for name, err := range map[string]error{
		"zero delay":  CheckDelay("delay", 0),
		"a year":      CheckDelay("delay", 365*24*time.Hour),
		"now":         CheckDue(time.Now()),
		"MaxDue":      CheckDue(MaxDue),
		"headers":     CheckHeaders(map[string]string{"traceparent": "x", "tenant": "y"}),
		"no headers":  CheckHeaders(nil),
		"redelay alo": CheckHeaders(map[string]string{"redelayed": "fine: no dash"}),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Lanes are reused, never shared by two calls at once, and every call on
// a lane gets a new nonce.
func TestLanes(t *testing.T) {
	var l lanes
	a, an, n1 := l.get()
	b, bn, n2 := l.get()
	if a == b || an == bn || n1 == n2 {
		t.Fatalf("two held lanes share a name or nonce: %q %q %q %q", an, bn, n1, n2)
	}
	l.put(a)
	c, cn, n3 := l.get()
	if c != a || cn != an || n3 == n1 || n3 == n2 {
		t.Fatalf("a freed lane is not reused with a new nonce: %d %q %q", c, cn, n3)
	}
	if l.nextNonce() == n3 {
		t.Fatal("nextNonce repeated a nonce")
	}
}

// A sender waits for more offers only when it has some and fewer than the
// most a recent call carried; after gatherDecay calls in a row that carried
// fewer, the target falls to the latest call's count.
func TestGatherTarget(t *testing.T) {
	var g gather
	if g.short(1) {
		t.Fatal("a new sender waits for more than one offer")
	}
	g.sent(1)
	if g.short(1) {
		t.Fatal("a lone producer's sender waits for a second offer")
	}
	g.sent(8)
	if !g.short(3) || g.short(8) || g.short(0) {
		t.Fatalf("after a call of 8: short(3)=%v short(8)=%v short(0)=%v; want true false false", g.short(3), g.short(8), g.short(0))
	}
	for range gatherDecay - 1 {
		g.sent(2)
	}
	if !g.short(2) {
		t.Fatalf("target fell after %d smaller calls, want it kept until %d", gatherDecay-1, gatherDecay)
	}
	g.sent(8) // a full call again: the count of smaller calls starts over
	for range gatherDecay - 1 {
		g.sent(2)
	}
	if !g.short(2) {
		t.Fatal("a full call did not restart the count of smaller calls")
	}
	g.sent(2)
	if g.short(2) || !g.short(1) {
		t.Fatalf("after %d calls of 2 the target is not 2", gatherDecay)
	}
}
