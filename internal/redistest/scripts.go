package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ScriptCalls counts the EVALSHA calls of one script made through a client,
// pipelined ones included (a call resent after NOSCRIPT as EVAL counts
// once).
type ScriptCalls struct {
	sha string
	n   atomic.Int64
}

// CountScript adds a hook to rdb that counts its calls of script.
func CountScript(rdb redis.UniversalClient, script *redis.Script) *ScriptCalls {
	c := &ScriptCalls{sha: script.Hash()}
	rdb.AddHook(c)
	return c
}

// Load returns the number of calls so far.
func (c *ScriptCalls) Load() int64 { return c.n.Load() }

func (c *ScriptCalls) count(cmd redis.Cmder) {
	if args := cmd.Args(); len(args) > 1 && (cmd.Name() == "evalsha" || cmd.Name() == "evalsha_ro") {
		if sha, _ := args[1].(string); sha == c.sha {
			c.n.Add(1)
		}
	}
}

// DialHook implements redis.Hook.
func (c *ScriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *ScriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *ScriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}
