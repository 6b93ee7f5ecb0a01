package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/osproc"
)

// Server is one redis-server started for one workload: fresh, on a free
// loopback port, without persistence, in its own temporary directory.
type Server struct {
	Addr string
	Port int
	cmd  *exec.Cmd
	dir  string
}

// StartServer starts redis-server (path bin) and waits until it answers.
func StartServer(ctx context.Context, bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "redelay-bench-redis-")
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
			"--loglevel", "warning", "--logfile", "")
		osproc.DieWithParent(cmd)
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start %s: %w", bin, err)
		}
		s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, cmd: cmd, dir: dir}
		if err := s.wait(ctx); err == nil {
			return s, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	os.RemoveAll(dir)
	return nil, errors.New("redis-server did not come up")
}

func (s *Server) wait(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c.Ping(ctx).Err() == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("timeout")
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	if s == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	_ = os.RemoveAll(s.dir)
}

// DataMemory returns INFO memory's used_memory less mem_clients_normal and
// used_memory_scripts, in bytes: what the server holds, without the
// buffers of its client connections (which vary with how many producers
// are connected) and without the script cache (about 17 KB per script, a
// contestant's background work may load one in the middle of a
// measurement).
func (s *Server) DataMemory(ctx context.Context) (int64, error) {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	used, err := infoField(info, "used_memory")
	if err != nil {
		return 0, err
	}
	clients, err := infoField(info, "mem_clients_normal")
	if err != nil {
		return 0, err
	}
	scripts, err := infoField(info, "used_memory_scripts")
	if err != nil {
		return 0, err
	}
	return used - clients - scripts, nil
}

// CPU returns the CPU time the server has used so far, user and system
// (INFO cpu).
func (s *Server) CPU(ctx context.Context) (time.Duration, error) {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, f := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, err := infoFloat(info, f)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return time.Duration(total * float64(time.Second)), nil
}

// Version returns the server's redis_version.
func (s *Server) Version(ctx context.Context) string {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "?"
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// infoValue returns the value of field name in an INFO reply.
func infoValue(info, name string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), name+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("INFO has no %s", name)
}

func infoField(info, name string) (int64, error) {
	v, err := infoValue(info, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func infoFloat(info, name string) (float64, error) {
	v, err := infoValue(info, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(v, 64)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
