package dashboard_test

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
)

// The dashboard mounted under /admin/queues/ behind basic authentication.
func Example() {
	mr, err := miniredis.Run() // an embedded server; use your Redis in production
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	// A queue with two emails waiting, consumed by some process (which
	// registers it for the overview).
	ctx := context.Background()
	q := blocking.New[string](rdb, "emails")
	defer q.Close()
	if _, _, err := q.Poll(ctx, 0); err != nil {
		panic(err)
	}
	for _, to := range []string{"ada@example.com", "alan@example.com"} {
		if _, err := q.Offer(ctx, to); err != nil {
			panic(err)
		}
	}
	waitListed(ctx, rdb, "emails")

	mux := http.NewServeMux()
	mux.Handle("/admin/queues/", basicAuth("ops", "s3cret", http.StripPrefix("/admin/queues", dashboard.New(rdb))))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(user, pass string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/admin/queues/", nil)
		if err != nil {
			panic(err)
		}
		req.SetBasicAuth(user, pass)
		res, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			panic(err)
		}
		return res.StatusCode, string(body)
	}
	status, _ := get("ops", "wrong")
	fmt.Println("wrong password:", status)
	status, body := get("ops", "s3cret")
	fmt.Println("overview:", status)
	row := regexp.MustCompile(`data-queue="emails">\s*<td class="name"><a data-testid="queue-link" href="([^"]*)"`).FindStringSubmatch(body)
	ready := regexp.MustCompile(`data-testid="count-ready">(\d+)<`).FindStringSubmatch(body)
	fmt.Println("link to the queue:", row[1])
	fmt.Println("ready:", ready[1])
	// Output:
	// wrong password: 401
	// overview: 200
	// link to the queue: ./queue?q=emails
	// ready: 2
}

// basicAuth lets through the requests that give user and pass.
func basicAuth(user, pass string, next http.Handler) http.Handler {
	want := []byte(user + ":" + pass)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u+":"+p), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="queues"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// waitListed waits until a consuming process has registered the queue.
func waitListed(ctx context.Context, rdb redis.UniversalClient, name string) {
	in := inspect.New(rdb)
	for range 500 {
		if names, err := in.Queues(ctx); err == nil && slices.Contains(names, name) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	panic("queue not registered")
}
