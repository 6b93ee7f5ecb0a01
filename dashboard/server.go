package dashboard

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/inspect"
)

// serverName says which Redis the dashboard reads, for the header of
// every page, from the client's options (no round trip; never a
// password): the address of a single server, the first seed of a Cluster
// and how many more, or the master's name a failover client asks the
// sentinels for.
func serverName(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		addrs := c.Options().Addrs
		switch len(addrs) {
		case 0:
			return "Cluster"
		case 1:
			return "Cluster " + addrs[0]
		}
		return fmt.Sprintf("Cluster %s (+%d)", addrs[0], len(addrs)-1)
	case *redis.Client:
		if a := c.Options().Addr; a != "FailoverClient" {
			return a
		}
		return "Sentinel failover"
	}
	return ""
}

// redisPage is the data of the page of the Redis deployment.
type redisPage struct {
	Info    inspect.ServerInfo
	Refused string // why INFO was refused; "" when it answered
	Live    string // the JSON of every queue's stats: the page turns stale with them
}

func (p redisPage) liveURL() string { return p.Live }

// MemoryUse is the used memory as a share of maxmemory, "" without a
// limit.
func (p redisPage) MemoryUse() string {
	if p.Info.MaxMemory <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*float64(p.Info.UsedMemory)/float64(p.Info.MaxMemory))
}

// redis answers the page of the Redis deployment: its address (without
// credentials), version, mode, masters, memory, clients and eviction
// policy (inspect.Server: INFO, one round trip per master). A server that
// refuses INFO (an ACL without @dangerous, a renamed command) is said to,
// with what the client knows: its address.
func (h *handler) redis(w http.ResponseWriter, r *http.Request) {
	info, err := h.in.Server(r.Context())
	p := redisPage{Info: info, Live: linksFor(r).API("")}
	if err != nil {
		if !errors.Is(err, inspect.ErrInfoRefused) {
			h.fail(w, r, err)
			return
		}
		h.log.Warn("dashboard: INFO refused", "err", err)
		p.Refused = "this Redis refuses INFO (an ACL without @dangerous, or a renamed command): its version, memory and clients are not known here"
		if p.Info.Addr == "" {
			p.Info.Addr = serverName(h.rdb)
		}
	}
	h.render(w, r, http.StatusOK, "redis", "Redis", p)
}

// bytesText writes n bytes for a person: "512 B", "3.2 MiB".
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
