package contestants

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
)

func init() { Register("asynq", func() Contestant { return &Asynq{} }) }

// asynqQueue is asynq's default queue, the one a server with default
// Queues consumes and Enqueue targets without asynq.Queue.
const asynqQueue = "default"

// asynqTaskType is the task type name the contestant enqueues and handles.
const asynqTaskType = "bench"

// Asynq is github.com/hibiken/asynq (v0.26.0) as its users would use it:
// Client.Enqueue with ProcessAt and a TaskID per item, and a Server with
// Concurrency 8 and otherwise default settings. Asynq moves scheduled tasks
// to pending on a poll (Config.DelayedTaskCheckInterval, 5 s by default), and
// idle processors poll for pending tasks every TaskCheckInterval (1 s by
// default, jittered), so delivery lags the due time by up to that much.
type Asynq struct {
	opt       asynq.RedisClientOpt
	client    *asynq.Client
	inspector *asynq.Inspector
	server    *asynq.Server
	pad       string
}

// Name implements Contestant.
func (*Asynq) Name() string { return "asynq" }

// Settings implements Contestant.
func (*Asynq) Settings() string {
	return "asynq v0.26.0; Enqueue(NewTask, ProcessAt(due), TaskID(id)) on queue \"default\"; " +
		"Server Concurrency 8, LogLevel Fatal, otherwise defaults " +
		"(DelayedTaskCheckInterval 5s, TaskCheckInterval 1s, MaxRetry 25, Retention 0)"
}

// SetPadding implements Contestant: the padding follows the id in the task
// payload, "<id> <padding>".
func (a *Asynq) SetPadding(n int) {
	a.pad = ""
	if n > 0 {
		a.pad = " " + padding(n)
	}
}

// Setup implements Contestant.
func (a *Asynq) Setup(_ context.Context, addr string) error {
	a.opt = asynq.RedisClientOpt{Addr: addr}
	a.client = asynq.NewClient(a.opt)
	a.inspector = asynq.NewInspector(a.opt)
	if err := a.client.Ping(); err != nil {
		return errors.Join(fmt.Errorf("asynq: ping %s: %w", addr, err), a.Close())
	}
	return nil
}

// Offer implements Contestant.
func (a *Asynq) Offer(ctx context.Context, id int, due time.Time) error {
	key := strconv.Itoa(id)
	task := asynq.NewTask(asynqTaskType, []byte(key+a.pad))
	if _, err := a.client.EnqueueContext(ctx, task, asynq.ProcessAt(due), asynq.TaskID(key)); err != nil {
		return fmt.Errorf("asynq: enqueue %d: %w", id, err)
	}
	return nil
}

// Cancel implements Canceler: it deletes the task while it is still
// scheduled (or pending). It fails once the task is being processed or gone.
func (a *Asynq) Cancel(_ context.Context, id int) error {
	if err := a.inspector.DeleteTask(asynqQueue, strconv.Itoa(id)); err != nil {
		return fmt.Errorf("asynq: cancel %d: %w", id, err)
	}
	return nil
}

// Consume implements Contestant.
func (a *Asynq) Consume(_ context.Context, arrived func(id int)) error {
	if a.server != nil {
		return errors.New("asynq: already consuming")
	}
	srv := asynq.NewServer(a.opt, asynq.Config{
		Concurrency: 8,
		LogLevel:    asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(asynqTaskType, func(_ context.Context, t *asynq.Task) error {
		idStr, _, _ := strings.Cut(string(t.Payload()), " ")
		id, err := strconv.Atoi(idStr)
		if err != nil {
			// Not retried: a payload that does not decode never will.
			return fmt.Errorf("bad payload %q: %w", t.Payload(), asynq.SkipRetry)
		}
		arrived(id)
		return nil
	})
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("asynq: start server: %w", err)
	}
	a.server = srv
	return nil
}

// Close implements Contestant. Shutdown waits for in-flight handlers.
func (a *Asynq) Close() error {
	if a.server != nil {
		a.server.Shutdown()
		a.server = nil
	}
	var errs []error
	if a.client != nil {
		errs = append(errs, a.client.Close())
		a.client = nil
	}
	if a.inspector != nil {
		errs = append(errs, a.inspector.Close())
		a.inspector = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("asynq: close: %w", err)
	}
	return nil
}

var _ Canceler = (*Asynq)(nil)
