package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is returned by a write of a queue with replica
// acknowledgement (SetReplicaAck) that WAIT did not confirm in time: the
// write was done on the master, and fewer replicas than asked confirmed it.
var ErrNotReplicated = errors.New("redelay: write not confirmed by replicas")

// MaxReplicaAckTimeout bounds the timeout of SetReplicaAck: WAIT holds a
// connection of the pool for that long at most.
const MaxReplicaAckTimeout = time.Minute

// replicaAck is how many replicas must confirm each write, and for how
// long to wait for them.
type replicaAck struct {
	n       int
	timeout time.Duration
}

// CheckReplicaAck says why n replicas and timeout cannot be asked of
// WAIT on the client: n below 1, a timeout not positive or above
// MaxReplicaAckTimeout, or one that does not fit in the client's read
// timeout (WAIT is pipelined with the write, so its reply must come
// within the read timeout, less Redis's timer tick, which ends WAIT).
func (c *Client) CheckReplicaAck(n int, timeout time.Duration) error {
	switch {
	case n < 1:
		return fmt.Errorf("replicas %d: must be at least 1", n)
	case timeout <= 0:
		return fmt.Errorf("timeout %v: must be positive", timeout)
	case timeout > MaxReplicaAckTimeout:
		return fmt.Errorf("timeout %v: at most %v", timeout, MaxReplicaAckTimeout)
	}
	// A client's options hold 0 or less for no read deadline, once
	// go-redis has applied its defaults.
	if rt := readTimeout(c.rdb); rt > 0 && timeout > rt-tickSlack {
		return fmt.Errorf("timeout %v: must be at most the client's ReadTimeout (%v) less %v, since WAIT's reply must come within it", timeout, rt, tickSlack)
	}
	return nil
}

// SetReplicaAck makes every offer, ack and settlement of q return only
// after WAIT n timeout confirmed it on the connection that wrote it; a
// write not confirmed in time returns an error wrapping ErrNotReplicated
// (with the write's result). Call it before q is used; the arguments were
// checked with CheckReplicaAck. n 0 turns it off.
func (q *Partition) SetReplicaAck(n int, timeout time.Duration) {
	if n <= 0 {
		q.ack = nil
		return
	}
	q.ack = &replicaAck{n: n, timeout: timeout}
}

// replicatedEval runs script s like eval, followed by WAIT on the same
// connection, in one round trip. cmd is the script's reply; werr is nil
// when WAIT confirmed it, or wraps ErrNotReplicated (also when WAIT
// itself failed: the script ran). On a script error werr is nil.
func (q *Partition) replicatedEval(ctx context.Context, s *redis.Script, keys []string, args ...any) (cmd *redis.Cmd, werr error) {
	var wait *redis.IntCmd
	err := q.pipelineOnMaster(ctx, keys[0], func(p redis.Pipeliner, whole bool) []redis.Cmder {
		if whole {
			cmd = s.Eval(ctx, p, keys, args...) // runs and loads it
		} else {
			cmd = s.EvalSha(ctx, p, keys, args...)
		}
		wait = q.ack.send(ctx, p)
		return []redis.Cmder{cmd}
	})
	if err != nil {
		cmd = redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd, nil
	}
	if cmd.Err() != nil {
		return cmd, nil
	}
	return cmd, q.ack.check(wait)
}

// send queues WAIT in p. It is marked not to be resent, which keeps
// go-redis from sending the whole pipeline again after a lost reply: WAIT
// counts the writes of its own connection, so on a new connection, after
// a resent write that found its work done and wrote nothing, it would
// confirm at once what the first connection wrote.
func (a *replicaAck) send(ctx context.Context, p redis.Pipeliner) *redis.IntCmd {
	cmd := redis.NewIntCmd(ctx, "wait", a.n, a.timeout.Milliseconds())
	_ = p.Process(ctx, noRetryInt{cmd})
	return cmd
}

// noRetryInt marks an IntCmd that go-redis must not resend.
type noRetryInt struct{ *redis.IntCmd }

// NoRetry implements redis.Cmder.
func (noRetryInt) NoRetry() bool { return true }

// check turns WAIT's reply into nil or an error wrapping ErrNotReplicated.
func (a *replicaAck) check(wait *redis.IntCmd) error {
	n, err := wait.Result()
	switch {
	case err != nil:
		return fmt.Errorf("%w: WAIT %d %d failed: %w", ErrNotReplicated, a.n, a.timeout.Milliseconds(), err)
	case n < int64(a.n):
		return fmt.Errorf("%w: %d of %d replicas confirmed within %v", ErrNotReplicated, n, a.n, a.timeout)
	}
	return nil
}

// pipelineOnMaster sends the commands fill queues, on one connection to
// the master that serves key: the client's own for a *redis.Client (a
// failover client included); for a *redis.ClusterClient, the node that
// serves key's slot, since a pipeline of the cluster client would send a
// keyless WAIT to some other node. fill queues the commands (scripts as
// EVALSHA, or as EVAL when whole) and returns those whose replies say
// whether they ran; when one says NOSCRIPT, the pipeline is sent again
// with whole scripts. A reply that says the commands did not run there
// (MOVED or ASK: the slot moved or is moving; TRYAGAIN, CLUSTERDOWN,
// READONLY, LOADING; see didNotRun) makes a cluster client reload its
// slot map, and the pipeline is sent again after a pause, for at most
// tryAgainFor; so is one that could not be sent (notSent). Any other
// failure is left in the commands for the caller: go-redis does not
// resend the pipeline (see replicaAck.send).
func (q *Partition) pipelineOnMaster(ctx context.Context, key string, fill func(p redis.Pipeliner, whole bool) []redis.Cmder) error {
	cc, cluster := q.c.rdb.(*redis.ClusterClient)
	deadline := time.Now().Add(tryAgainFor)
	noscript := false
	for attempt := 0; ; attempt++ {
		var target redis.Cmdable = q.c.rdb
		if cluster {
			node, err := cc.MasterForKey(ctx, key)
			if err != nil {
				return err
			}
			target = node
		}
		pipe := target.Pipeline()
		check := fill(pipe, noscript)
		_, err := pipe.Exec(ctx)
		if err == nil {
			return nil
		}
		var first error
		for _, c := range check {
			if first = c.Err(); first != nil {
				break
			}
		}
		switch {
		case first == nil:
			return nil // only WAIT failed: the caller reads it
		case !noscript && redis.HasErrorPrefix(first, "NOSCRIPT"):
			noscript = true
			continue
		case !didNotRun(first) && !notSent(first), time.Now().After(deadline):
			return nil // the caller reads the command's error
		}
		if cluster {
			cc.ReloadState(ctx)
		}
		if err := sleepCtx(ctx, tryAgainPause(attempt)); err != nil {
			return err
		}
	}
}

// txOnMaster runs the scripts fill queues (as EVALSHA, or as EVAL when
// whole) in MULTI/EXEC on a connection of its own to the master that
// serves key, then WAIT on that connection (WAIT does not block inside a
// transaction), and returns WAIT's command: for commands that must run
// together, a bounded batch's offer calls. A transaction answered
// NOSCRIPT ran nothing and is sent again with whole scripts; other
// failures are left in the commands (there is no MOVED or TRYAGAIN retry
// here: the batch fails and may be offered again).
func (q *Partition) txOnMaster(ctx context.Context, key string, fill func(p redis.Pipeliner, whole bool) []redis.Cmder) (*redis.IntCmd, error) {
	var target redis.UniversalClient = q.c.rdb
	if cc, ok := q.c.rdb.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		target = node
	}
	cl, ok := target.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("a bounded batch with replica acknowledgement needs a *redis.Client or a *redis.ClusterClient, not %T", q.c.rdb)
	}
	conn := cl.Conn()
	defer conn.Close()
	for _, whole := range []bool{false, true} {
		tx := conn.TxPipeline()
		cmds := fill(tx, whole)
		_, _ = tx.Exec(ctx) // errors are read per command
		if whole || len(cmds) == 0 || cmds[0].Err() == nil || !redis.HasErrorPrefix(cmds[0].Err(), "NOSCRIPT") {
			break
		}
	}
	wait := redis.NewIntCmd(ctx, "wait", q.ack.n, q.ack.timeout.Milliseconds())
	_ = conn.Process(ctx, noRetryInt{wait})
	return wait, nil
}

// didNotRun reports whether an error reply says the server did not run
// the command (a script: wrote nothing) and another try may succeed: the
// slot moved (MOVED) or is moving (ASK, TRYAGAIN), the cluster is failing
// over (CLUSTERDOWN), the server became a replica (READONLY: a script
// stops at its first write, and a replica refuses every write) or is
// loading its data (LOADING).
func didNotRun(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	s := err.Error()
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "READONLY", "LOADING"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// notSent reports whether err says a pipeline was never sent: no
// connection could be made (go-redis retries that itself, but not for a
// pipeline with a command it must not resend).
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// tryAgainFor bounds how long a call is sent again while replies say it
// did not run: about what a slot migration or a cluster failover takes.
const tryAgainFor = 5 * time.Second

// tryAgainPause is the pause before try attempt+2: 10 ms doubling, at
// most 250 ms.
func tryAgainPause(attempt int) time.Duration {
	return min(10*time.Millisecond<<min(attempt, 5), 250*time.Millisecond)
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
