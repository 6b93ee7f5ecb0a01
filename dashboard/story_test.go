package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// storyQueue returns a new queue holding seedtest.Story's dead letter,
// and a time before it died.
func storyQueue(t *testing.T, rdb redis.UniversalClient) (string, time.Time) {
	t.Helper()
	name := redistest.QueueName(t)
	return name, seedtest.Story(t, rdb, name)
}

var (
	reErrorEntry = regexp.MustCompile(`<li class="error" data-testid="error-entry">([^<]*)</li>`)
	reHeaderName = regexp.MustCompile(`data-testid="header-row" data-name="([^"]*)"`)
)

// A dead letter's page tells its story: its attempts, when it was
// dead-lettered and how long ago, and the error of each attempt, newest
// last; the headers that hold these are not repeated raw, but the last
// error, whole, is. Its row says when it was dead-lettered, its last
// error and how many came before.
func TestDeadLetterStory(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name, before := storyQueue(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("item?" + url.Values{"q": {name}, "id": {"story"}}.Encode())
		wantStatus(t, p, http.StatusOK)
		if got, _ := cell(p.body, "attempt"); got != "3" {
			t.Errorf("attempt %q, want 3", got)
		}
		dead, _ := cell(p.body, "dead-at")
		at, err := time.Parse("2006-01-02 15:04:05.000 UTC", strings.SplitN(dead, " (", 2)[0])
		if err != nil || at.Before(before.Truncate(time.Millisecond)) || at.After(time.Now()) || !strings.HasSuffix(dead, " ago)") {
			t.Errorf("dead-lettered %q (%v), want a time since %v and how long ago", dead, err, before)
		}
		var errs []string
		for _, m := range reErrorEntry.FindAllStringSubmatch(p.body, -1) {
			errs = append(errs, m[1])
		}
		if want := []string{"boom 1", "boom 2", "boom 3"}; !slices.Equal(errs, want) {
			t.Errorf("errors %q, want %q", errs, want)
		}
		var headers []string
		for _, m := range reHeaderName.FindAllStringSubmatch(p.body, -1) {
			headers = append(headers, m[1])
		}
		if !slices.Equal(headers, []string{blocking.HeaderError}) {
			t.Errorf("header rows %q, want only %s", headers, blocking.HeaderError)
		}

		p = b.get("queue?" + url.Values{"q": {name}, "state": {"dead"}}.Encode())
		row := itemRow(p.body, "story")
		want := `<span data-testid="dead-at" title="` + strings.SplitN(dead, " (", 2)[0] + `">`
		if got, _ := cell(row, "dead-at"); !strings.Contains(row, want) || !strings.HasSuffix(got, " ago") {
			t.Errorf("row: dead-lettered %q, want how long ago, the time in its title:\n%s", got, row)
		}
		if !strings.Contains(row, "boom 3") || strings.Contains(row, "boom 2") {
			t.Errorf("row: not the last error alone:\n%s", row)
		}
		if got, _ := cell(row, "earlier-errors"); got != "(+2 earlier)" {
			t.Errorf("row: earlier errors %q", got)
		}
	})
}
