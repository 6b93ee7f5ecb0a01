package lua

import (
	"os"
	"path/filepath"
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
	for _, name := range []string{"lane_replay", "ready_push", "ready_check", "prio", "prio_fns", "read_uvarint", "seq_bytes"} {
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

// Each definition composed into a script is a closure built on every call,
// so compose leaves out names that appear only in comments or as fields,
// and the hot scripts get no helpers of features they do not reach.
func TestComposeSkipsCommentsAndFields(t *testing.T) {
	has := func(src, name string) bool {
		return regexp.MustCompile(`(?m)^local (function )?` + name + `\b`).MatchString(src)
	}
	got := compose("-- now_ms() in a comment\nlocal X = {}\nX.now_ms = 1\nreturn x..now_us() -- be64")
	if !has(got, "now_us") {
		t.Error("a call after a concatenation (..) was left out")
	}
	for _, name := range []string{"now_ms", "be64"} {
		if has(got, name) {
			t.Errorf("compose took %s, named only in a comment or as a field", name)
		}
	}
	if got := compose("return '-- x' .. now_ms()"); !has(got, "now_ms") {
		t.Error(`"--" inside a string was taken for a comment`)
	}
	if got := compose("return 'now_ms'"); has(got, "now_ms") {
		t.Error("compose took now_ms, named only in a string")
	}
	lean := []struct {
		script, src string
		without     []string
	}{
		// Settling a lease of a queue without groups reads no envelope.
		{"ack.lua", ackSrc, []string{"prio", "extra", "gtake", "gpush", "story", "ready_push"}},
		// Take pushes nothing and writes no story.
		{"pop.lua", popSrc, []string{"gpush", "story", "ready_push", "group_of"}},
	}
	for _, c := range lean {
		got := compose(c.src)
		for _, name := range c.without {
			if has(got, name) {
				t.Errorf("%s is composed with %s, which it does not need", c.script, name)
			}
		}
	}
}

func TestWithoutComments(t *testing.T) {
	for in, want := range map[string]string{
		"a -- b\nc":              "a \nc",
		"s = '--x' -- y":         "s = '--x' ",
		`s = "it's -- \" --" --`: `s = "it's -- \" --" `,
		"-- only":                "",
		"a\n--b\n--c\nd":         "a\n\n\nd",
	} {
		if got := withoutComments(in); got != want {
			t.Errorf("withoutComments(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoLongBrackets(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) < 30 {
		t.Fatalf("the scripts: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "[[") || strings.Contains(string(b), "[=") {
			t.Errorf("%s uses a long bracket, which withoutComments does not read", f)
		}
	}
}

func TestComposeInlinesConstants(t *testing.T) {
	got := compose("local x = SEQ_LEN + 1 -- SEQ_LEN\nlocal s = 'SEQ_LEN'\nlocal y = X.SEQ_LEN + 0x1F\nreturn PRIO_MARKER .. TURN, y .. PRIO_MAX")
	want := "local x = 6 + 1 -- SEQ_LEN\nlocal s = 'SEQ_LEN'\nlocal y = X.SEQ_LEN + 0x1F\nreturn '\\0' .. '\\0\\1', y .. 9"
	if got != want {
		t.Fatalf("compose =\n%s\nwant\n%s", got, want)
	}
	// Every constant of the prelude is one compose inlines, and no local
	// or parameter anywhere takes its name (inlining would replace it).
	files, err := filepath.Glob("*.lua")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(withoutComments(string(b)))
	}
	n := 0
	for _, d := range definitions(prelude) {
		if d.name != strings.ToUpper(d.name) {
			continue
		}
		n++
		if !constDef.MatchString(strings.TrimSpace(withoutComments(d.text))) {
			t.Errorf("the constant %s is no literal that compose inlines", d.name)
		}
		declared := regexp.MustCompile(`local\s+` + d.name + `\b|function[^(]*\([^)]*\b` + d.name + `\b`)
		if c := len(declared.FindAllString(all.String(), -1)); c != 1 {
			t.Errorf("%s is declared %d times in the scripts and the prelude, want once", d.name, c)
		}
	}
	if n < 10 {
		t.Fatalf("%d constants in the prelude", n)
	}
}
