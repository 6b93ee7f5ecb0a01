package redistest

import (
	"github.com/redis/go-redis/v9"
)

// CountScript adds a hook to rdb that counts its EVALSHA calls of script,
// pipelined ones included (a call resent after NOSCRIPT as EVAL counts
// once); on a Cluster, the calls the cluster client makes.
func CountScript(rdb redis.UniversalClient, script *redis.Script) interface{ Load() int64 } {
	sha := script.Hash()
	h := &commandCounter{match: func(args []any) bool {
		name, _ := args[0].(string)
		if len(args) < 2 || (name != "evalsha" && name != "evalsha_ro") {
			return false
		}
		s, _ := args[1].(string)
		return s == sha
	}}
	rdb.AddHook(h)
	return &h.n
}
