package telemetry

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// failoverAddr is the Addr go-redis gives the options of a client made by
// redis.NewFailoverClient: the master it talks to changes with failovers.
const failoverAddr = "FailoverClient"

// ServerOf returns the server.address and server.port of a queue's
// telemetry: the Redis server as the client was configured with it, with
// no lookup. For a *redis.Client, its address (a Unix socket's path, with
// no port); for a *redis.ClusterClient, the first address it was given,
// which names the cluster (the node that serves a queue moves with its
// slot). A failover client (Sentinel), whose master changes, and other
// clients have none: "" and 0.
func ServerOf(rdb redis.UniversalClient) (address string, port int) {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		switch {
		case o.Addr == failoverAddr:
			return "", 0
		case o.Network == "unix":
			return o.Addr, 0
		}
		return splitAddr(o.Addr)
	case *redis.ClusterClient:
		if addrs := c.Options().Addrs; len(addrs) > 0 {
			return splitAddr(addrs[0])
		}
	}
	return "", 0
}

// splitAddr splits host:port; an address without a valid port is all
// host.
func splitAddr(addr string) (string, int) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 {
		return host, 0
	}
	return host, port
}

// errType is the error.type of err: the queue's name for it (Config.
// ErrorType), else errorType's.
func (q *Recorder) errType(err error) string {
	if q.errorType != nil {
		if s := q.errorType(err); s != "" {
			return s
		}
	}
	return errorType(err)
}

// errorType names an error no queue knows: "canceled" and "timeout" for
// the context's errors, the first word of an error Redis replied (OOM,
// READONLY, WRONGTYPE...), else the conventions' default: the Go type of
// the error under any fmt.Errorf wrapping, or what its ErrorType method
// says.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !errors.Is(err, redis.Nil) {
		if word, _, _ := strings.Cut(rerr.Error(), " "); word != "" {
			return word
		}
	}
	return semconv.ErrorType(err).Value.AsString()
}
