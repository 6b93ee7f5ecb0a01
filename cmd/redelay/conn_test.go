package main

import (
	"strings"
	"testing"
)

// redactURL hides the password of a URL, valid or not, and nothing else.
func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"redis://user:s3cret@host:6379/0":                               "redis://user:***@host:6379/0",
		"rediss://:s3cret@host":                                         "rediss://:***@host",
		"redis://user:p%40ss@host/1?protocol=3":                         "redis://user:***@host/1?protocol=3",
		"redis://user:p@ss/w@host:6379/0":                               "redis://user:***@host:6379/0",
		"redis://user:s3cret@host:bad/0":                                "redis://user:***@host:bad/0",
		"user:s3cret@host:6379":                                         "user:***@host:6379",
		"redis://user@host:6379/0":                                      "redis://user@host:6379/0",
		"redis://host:6379/0":                                           "redis://host:6379/0",
		"unix://user:s3cret@/run/redis.sock?db=1":                       "unix://user:***@/run/redis.sock?db=1",
		"redis://host:6379/0?password=hunter2":                          "redis://host:6379/0?password=***",
		"redis://host/0?username=u&password=p%40ss&protocol=3":          "redis://host/0?username=u&password=***&protocol=3",
		"redis://u:s3cret@host/0?db=1&Sentinel_Password=x;token=y#frag": "redis://u:***@host/0?db=1&Sentinel_Password=***;token=***#frag",
		"redis://host/0?protocol=3&client_name=pass":                    "redis://host/0?protocol=3&client_name=pass",
	}
	for in, want := range cases {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// redact hides the passwords of the connection settings in any message,
// escaped or not, and the password of any URL in it.
func TestRedact(t *testing.T) {
	env := map[string]string{redisURLEnv: "redis://u:env%2Fsecret@h/0"}
	a := &app{getenv: func(k string) string { return env[k] }}
	a.flags.redisURL = "redis://u:flag-secret@h/0"
	msg := a.redact(`parse "redis://x:other-secret@h/0": flag-secret, env/secret and env%2Fsecret`)
	for _, s := range []string{"other-secret", "flag-secret", "env/secret", "env%2Fsecret"} {
		if strings.Contains(msg, s) {
			t.Errorf("redact left %q in %q", s, msg)
		}
	}
	if !strings.Contains(msg, "redis://x:***@h/0") {
		t.Errorf("redact: %q", msg)
	}

	// A password in a query parameter, of the URL given or of any URL in
	// a message, escaped or not.
	a.flags.redisURL = "redis://h/0?username=u&password=q%2Fsecret"
	msg = a.redact(`bad Redis URL redis://h/0?username=u&password=q%2Fsecret: q/secret; "rediss://h/1?pwd=other-secret&db=2"`)
	for _, s := range []string{"q%2Fsecret", "q/secret", "other-secret"} {
		if strings.Contains(msg, s) {
			t.Errorf("redact left %q in %q", s, msg)
		}
	}
	if want := `bad Redis URL redis://h/0?username=u&password=***: ***; "rediss://h/1?pwd=***&db=2"`; msg != want {
		t.Errorf("redact = %q, want %q", msg, want)
	}
}
