package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// consume runs a Consume of the queue name with concurrency 3 until the
// test ends, and returns once it has recorded itself.
func consume(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	q := blocking.New[string](rdb, name)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(context.Context, *blocking.Delivery[string]) error { return nil }, blocking.WithConcurrency(3))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = q.Close()
	})
	in := inspect.New(rdb)
	redistest.WaitFor(t, 15*time.Second, "the consumer recorded", func() bool {
		all, err := in.Consumers(context.Background())
		return err == nil && slices.ContainsFunc(all, func(c inspect.Consumer) bool { return c.Queue == name })
	})
}

// The consumers page lists every process consuming a queue, with its
// host, PID and concurrency, and links to its queue; a queue's page lists
// its own.
func TestConsumersPage(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		consume(t, rdb, name)
		idle := redistest.QueueName(t)
		if _, err := blocking.New[string](rdb, idle).Offer(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, dashboard.New(rdb), "")
		host, _ := os.Hostname()
		row := func(p page) string {
			return section(p.body, "tr", `data-testid="consumer-row" data-queue="`+name+`" data-pid="`+strconv.Itoa(os.Getpid())+`"`)
		}
		for _, ref := range []string{"consumers", "queue?q=" + url.QueryEscape(name)} {
			p := b.get(ref)
			wantStatus(t, p, http.StatusOK)
			r := row(p)
			for testid, want := range map[string]string{"consumer-host": host, "consumer-pid": strconv.Itoa(os.Getpid()), "consumer-concurrency": "3", "consumer-inflight": "0"} {
				if got, _ := cell(r, testid); got != want {
					t.Errorf("%s: %s %q, want %q:\n%s", ref, testid, got, want, r)
				}
			}
			if link := strings.Contains(r, `data-testid="consumer-queue"`); link != (ref == "consumers") {
				t.Errorf("%s: a link to the queue: %v", ref, link)
			}
		}
		if p := b.get("consumers"); hrefOf(t, row(p), "consumer-queue") != "./queue?q="+url.QueryEscape(name) {
			t.Errorf("the consumer's queue links to %q", hrefOf(t, row(p), "consumer-queue"))
		}
		p := b.get("queue?q=" + url.QueryEscape(idle))
		if !strings.Contains(p.body, `data-testid="no-consumers"`) || strings.Contains(p.body, `data-testid="consumer-row"`) {
			t.Errorf("the page of a queue no process consumes:\n%s", section(p.body, "table", `class="grid consumers`))
		}
	})
}

// The Redis page says which server the queues are on: version, mode,
// memory, clients, eviction policy; every page's header names it.
func TestRedisPage(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("redis")
		wantStatus(t, p, http.StatusOK)
		info, err := inspect.New(rdb).Server(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wantMode := "standalone"
		if c, ok := rdb.(*redis.ClusterClient); ok {
			wantMode = "cluster, 3 masters"
			if got, want := info.Addr, c.Options().Addrs[0]; got != want {
				t.Fatalf("inspect says %s, the client %s", got, want)
			}
		}
		for testid, want := range map[string]string{"redis-addr": info.Addr, "redis-version": info.Version, "redis-mode": wantMode, "redis-eviction": "noeviction"} {
			if got, _ := cell(p.body, testid); got != want {
				t.Errorf("%s %q, want %q", testid, got, want)
			}
		}
		if got, _ := cell(p.body, "redis-memory"); !strings.HasSuffix(got, "iB (no maxmemory: no limit)") {
			t.Errorf("memory %q", got)
		}
		if got, _ := cell(p.body, "redis-clients"); got == "" || got == "0" {
			t.Errorf("clients %q", got)
		}
		want := "Redis " + info.Addr
		if _, ok := rdb.(*redis.ClusterClient); ok {
			want = "Redis Cluster " + info.Addr + " (+2)"
		}
		for _, ref := range []string{"./", "redis", "consumers", "nothing-here"} {
			if got, _ := cell(b.get(ref).body, "server"); got != want {
				t.Errorf("%s: header names %q, want %q", ref, got, want)
			}
		}
	})
}

// A password never shows, and a server that refuses INFO to the
// dashboard's user is said to, with its address.
func TestRedisPageGuarded(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t)
	if err := srv.Client(t).ConfigSet(ctx, "requirepass", "hunter2").Err(); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "hunter2"})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.Do(ctx, "ACL", "SETUSER", "viewer", "on", ">s3cret-pass", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	viewer := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "viewer", Password: "s3cret-pass"})
	t.Cleanup(func() { _ = viewer.Close() })
	for name, rdb := range map[string]*redis.Client{"admin": admin, "viewer": viewer} {
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("redis")
		wantStatus(t, p, http.StatusOK)
		if strings.Contains(p.body, "hunter2") || strings.Contains(p.body, "s3cret") {
			t.Errorf("%s: the page shows a password", name)
		}
		if got, _ := cell(p.body, "redis-addr"); got != srv.Addr() {
			t.Errorf("%s: address %q, want %s", name, got, srv.Addr())
		}
		_, refused := cell(p.body, "info-refused")
		if refused != (name == "viewer") {
			t.Errorf("%s: INFO refused said %v:\n%s", name, refused, p.body)
		}
	}
}
