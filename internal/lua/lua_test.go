package lua

import (
	"regexp"
	"strings"
	"testing"
)

func TestDefinitionsCoverThePrelude(t *testing.T) {
	defs := definitions(prelude)
	top := regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(prelude, -1)
	if len(defs) != len(top) || len(defs) < 20 {
		t.Fatalf("%d definitions for %d top-level locals", len(defs), len(top))
	}
	seen := map[string]bool{}
	var joined strings.Builder
	for i, d := range defs {
		if d.name != top[i][1] || seen[d.name] {
			t.Fatalf("definition %d is %q, want %q once", i, d.name, top[i][1])
		}
		seen[d.name] = true
		joined.WriteString(d.text)
	}
	// Nothing but the file's opening comment is left out.
	if !strings.HasSuffix(prelude, joined.String()) || len(prelude)-joined.Len() > 200 {
		t.Fatalf("the definitions leave out %d bytes of the prelude", len(prelude)-joined.Len())
	}
}

func TestComposeTakesWhatIsNamed(t *testing.T) {
	has := func(src, name string) bool {
		return regexp.MustCompile(`(?m)^local (function )?` + name + `\b`).MatchString(src)
	}
	got := compose("return now_ms()")
	for _, name := range []string{"now_ms", "now_us"} { // now_ms calls now_us
		if !has(got, name) {
			t.Errorf("compose(now_ms) lacks %s", name)
		}
	}
	for _, name := range []string{"be64", "lane_replay", "prio", "ready_push"} {
		if has(got, name) {
			t.Errorf("compose(now_ms) has %s", name)
		}
	}
	if !strings.HasSuffix(got, "return now_ms()") {
		t.Fatal("the script's own text is not last")
	}
	if compose("return 1") != "return 1" {
		t.Fatal("a script that names nothing got definitions")
	}
	offer := compose(offerSrc)
	for _, name := range []string{"lane_replay", "ready_push", "ready_check", "prio", "prio_fns", "read_uvarint", "PRIO_TAG", "seq_bytes"} {
		if !has(offer, name) {
			t.Errorf("offer.lua lacks %s", name)
		}
	}
	for _, name := range []string{"with_header", "take_ready", "remove_pending"} {
		if has(offer, name) {
			t.Errorf("offer.lua has %s, which it does not use", name)
		}
	}
}
