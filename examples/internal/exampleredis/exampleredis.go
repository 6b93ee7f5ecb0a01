// Package exampleredis connects the example programs to Redis: to the server
// named by the REDIS_ADDR environment variable, or to an embedded miniredis
// so that the examples run on a machine with no Redis server.
package exampleredis

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Connect returns a client to the Redis server at $REDIS_ADDR (host:port),
// after checking that it answers. With REDIS_ADDR unset or empty it starts an
// embedded miniredis on a loopback port and returns a client to it instead;
// it says so on standard error.
//
// Call cleanup when done: it closes the client and stops the embedded server,
// if any. On error there is nothing to clean up.
func Connect() (rdb *redis.Client, cleanup func(), err error) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded miniredis: %w", err)
		}
		fmt.Fprintf(os.Stderr, "REDIS_ADDR not set: using an embedded miniredis at %s\n", mr.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		return rdb, func() { _ = rdb.Close(); mr.Close() }, nil
	}

	rdb = redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	return rdb, func() { _ = rdb.Close() }, nil
}
