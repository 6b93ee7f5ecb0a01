package contestants

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redelay/redelay/internal/osproc"
)

func init() { Register("bullmq", func() Contestant { return &BullMQ{} }) }

// bullmqConcurrency is the Worker concurrency.
const bullmqConcurrency = 8

// bullmqCloseTimeout bounds how long Close waits for the Node.js process to
// close its worker and queue before killing it.
const bullmqCloseTimeout = 15 * time.Second

// BullMQ is BullMQ 6.7.0 (Node.js) as its users would use it: Queue.add with
// a delay and a jobId per item, and a Worker with concurrency 8 and otherwise
// default settings. Go drives it through bench/bullmq/worker.mjs, one Node.js
// process per contestant, over a line protocol on the process's stdin and
// stdout (see worker.mjs). Requests are tagged, so concurrent Offers are in
// flight together in Node.js; still, every offer and every delivery also
// crosses the pipe, which Go clients of the other contestants do not pay.
type BullMQ struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr tailBuffer
	pad    int

	writeMu sync.Mutex // serializes request lines on stdin

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]chan string
	arrived func(id int)
	waitErr error // cmd.Wait's result, set before done is closed

	done   chan struct{} // closed when stdout hits EOF and the process exited
	closed bool
}

// Name implements Contestant.
func (*BullMQ) Name() string { return "bullmq" }

// Settings implements Contestant.
func (*BullMQ) Settings() string {
	return "bullmq 6.7.0 on Node.js " + nodeVersion() + ", driven from Go over a stdin/stdout line protocol " +
		"(every offer and delivery crosses the pipe; requests pipelined); " +
		"Queue.add(name, {id} (or {id, pad} when padded), {delay, jobId}) / addBulk for batches; " +
		"Worker concurrency 8, otherwise defaults (removeOnComplete off, attempts 1)"
}

// ClientPid implements ClientProcess: the Node.js worker, 0 before Setup.
func (b *BullMQ) ClientPid() int {
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// SetPadding implements Contestant: worker.mjs adds a pad field of n bytes
// to each job's data, {id, pad}.
func (b *BullMQ) SetPadding(n int) { b.pad = max(n, 0) }

// Setup implements Contestant: it installs the Node.js dependencies when
// they are missing, then starts worker.mjs against addr.
func (b *BullMQ) Setup(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bullmq: address %q: %w", addr, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("bullmq: Node.js is required (node not found on PATH): %w", err)
	}
	dir, err := bullmqDir()
	if err != nil {
		return err
	}
	if err := bullmqInstall(ctx, dir); err != nil {
		return err
	}

	cmd := exec.Command(node, "worker.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDIS_HOST="+host, "REDIS_PORT="+port, "QUEUE=bench", "PADDING="+strconv.Itoa(b.pad))
	cmd.Stderr = &b.stderr
	osproc.DieWithParent(cmd) // elsewhere than Linux, worker.mjs exits when its stdin closes
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("bullmq: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("bullmq: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bullmq: start node: %w", err)
	}
	b.cmd, b.stdin = cmd, stdin
	b.pending = make(map[uint64]chan string)
	b.done = make(chan struct{})
	go b.read(stdout)
	return nil
}

// read routes lines from the Node.js process: deliveries to the arrived
// callback, responses to the request waiting for them.
func (b *BullMQ) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "arrived "); ok {
			id, err := strconv.Atoi(rest)
			b.mu.Lock()
			arrived := b.arrived
			b.mu.Unlock()
			if err == nil && arrived != nil {
				arrived(id)
			}
			continue
		}
		seqStr, resp, _ := strings.Cut(line, " ")
		seq, err := strconv.ParseUint(seqStr, 10, 64)
		if err != nil {
			continue // not protocol output; ignore
		}
		b.mu.Lock()
		ch := b.pending[seq]
		delete(b.pending, seq)
		b.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
	err := b.cmd.Wait()
	b.mu.Lock()
	b.waitErr = err
	b.mu.Unlock()
	close(b.done)
}

// call sends one request and waits for its response.
func (b *BullMQ) call(ctx context.Context, cmd string, args ...string) error {
	if b.cmd == nil {
		return errors.New("bullmq: not set up")
	}
	ch := make(chan string, 1)
	b.mu.Lock()
	b.seq++
	seq := b.seq
	b.pending[seq] = ch
	b.mu.Unlock()
	forget := func() {
		b.mu.Lock()
		delete(b.pending, seq)
		b.mu.Unlock()
	}

	line := strconv.FormatUint(seq, 10) + " " + cmd
	for _, a := range args {
		line += " " + a
	}
	b.writeMu.Lock()
	_, err := io.WriteString(b.stdin, line+"\n")
	b.writeMu.Unlock()
	if err != nil {
		forget()
		if exit := b.exited(); exit != nil {
			return exit
		}
		return fmt.Errorf("bullmq: %s: %w", cmd, err)
	}

	select {
	case resp := <-ch:
		if resp == "ok" {
			return nil
		}
		return fmt.Errorf("bullmq: %s: %s", cmd, strings.TrimPrefix(resp, "err "))
	case <-b.done:
		forget()
		return b.exited()
	case <-ctx.Done():
		forget()
		return ctx.Err()
	}
}

// errNodeExited is wrapped by the errors of requests that failed because the
// Node.js process exited.
var errNodeExited = errors.New("node worker.mjs exited")

// exited returns an error describing the process's exit once it has
// exited, else nil.
func (b *BullMQ) exited() error {
	select {
	case <-b.done:
	default:
		return nil
	}
	b.mu.Lock()
	err := b.waitErr
	b.mu.Unlock()
	if err == nil {
		return fmt.Errorf("bullmq: %w%s", errNodeExited, b.stderr.describe())
	}
	return fmt.Errorf("bullmq: %w: %w%s", errNodeExited, err, b.stderr.describe())
}

// Offer implements Contestant.
func (b *BullMQ) Offer(ctx context.Context, id int, due time.Time) error {
	return b.call(ctx, "offer", strconv.Itoa(id), strconv.FormatInt(due.UnixMilli(), 10))
}

// OfferBatch implements BatchOfferer with Queue.addBulk.
func (b *BullMQ) OfferBatch(ctx context.Context, ids []int, due time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	var sb strings.Builder
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(id))
	}
	return b.call(ctx, "offerbatch", strconv.FormatInt(due.UnixMilli(), 10), sb.String())
}

// Cancel implements Canceler with Queue.getJob and Job.remove. It fails when
// the job is gone or locked by the worker.
func (b *BullMQ) Cancel(ctx context.Context, id int) error {
	return b.call(ctx, "cancel", strconv.Itoa(id))
}

// Consume implements Contestant.
func (b *BullMQ) Consume(ctx context.Context, arrived func(id int)) error {
	b.mu.Lock()
	b.arrived = arrived
	b.mu.Unlock()
	return b.call(ctx, "consume", strconv.Itoa(bullmqConcurrency))
}

// Close implements Contestant: it asks worker.mjs to close its worker and
// queue, and kills the process if it does not exit in time.
func (b *BullMQ) Close() error {
	if b.cmd == nil || b.closed {
		return nil
	}
	b.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), bullmqCloseTimeout)
	defer cancel()
	err := b.call(ctx, "close")
	b.stdin.Close()
	select {
	case <-b.done:
	case <-ctx.Done():
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	b.mu.Lock()
	waitErr := b.waitErr
	b.mu.Unlock()
	if errors.Is(err, errNodeExited) && waitErr == nil {
		return nil // exited cleanly before answering (stdin closed)
	}
	if err == nil && waitErr != nil {
		return fmt.Errorf("bullmq: node worker.mjs: %w%s", waitErr, b.stderr.describe())
	}
	return err
}

var (
	_ BatchOfferer = (*BullMQ)(nil)
	_ Canceler     = (*BullMQ)(nil)
)

// bullmqDir finds bench/bullmq, next to this package's source directory (or
// relative to the working directory, for binaries built elsewhere).
func bullmqDir() (string, error) {
	var candidates []string
	if _, file, _, ok := runtime.Caller(0); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "..", "bullmq"))
	}
	candidates = append(candidates, "bullmq", filepath.Join("bench", "bullmq"), filepath.Join("..", "bullmq"))
	for _, dir := range candidates {
		if _, err := os.Stat(filepath.Join(dir, "worker.mjs")); err == nil {
			return filepath.Abs(dir)
		}
	}
	return "", fmt.Errorf("bullmq: worker.mjs not found (looked in %s)", strings.Join(candidates, ", "))
}

var bullmqInstallMu sync.Mutex

// bullmqInstall runs npm ci in dir when node_modules lacks bullmq, so a fresh
// checkout works.
func bullmqInstall(ctx context.Context, dir string) error {
	bullmqInstallMu.Lock()
	defer bullmqInstallMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq", "package.json")); err == nil {
		return nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("bullmq: npm is required to install %s/node_modules (npm not found on PATH): %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("bullmq: npm ci in %s: %w\n%s", dir, err, out)
	}
	return nil
}

var nodeVersion = sync.OnceValue(func() string {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "(unknown version)"
	}
	return strings.TrimSpace(string(out))
})

// tailBuffer keeps the last few KiB written to it (the Node.js stderr), for
// error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBufferSize = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailBufferSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// describe returns the tail as a suffix for an error message, or "".
func (t *tailBuffer) describe() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
