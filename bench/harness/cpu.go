package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redelay/redelay/bench/contestants"
	"github.com/redelay/redelay/internal/osproc"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: Linux reports
// them in 1/100 s on every architecture (USER_HZ).
const userHZ = 100

// clientCPU is the CPU time (user + system) the client side of c has used
// so far: this process's (every in-process contestant, and the harness's
// own driving of the offers), plus that of the process c runs its client
// in (contestants.ClientProcess), if any.
func clientCPU(c contestants.Contestant) (time.Duration, error) {
	t, err := osproc.CPU()
	if err != nil {
		return 0, err
	}
	if cp, ok := c.(contestants.ClientProcess); ok {
		if pid := cp.ClientPid(); pid > 0 {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return 0, fmt.Errorf("client process: %w", err)
			}
			d, err := statCPU(string(b))
			if err != nil {
				return 0, fmt.Errorf("client process %d: %w", pid, err)
			}
			t += d
		}
	}
	return t, nil
}

// statCPU returns utime + stime from the text of a /proc/<pid>/stat file.
// The second field, the command name in parentheses, may itself hold
// spaces and parentheses, so fields are counted from the last ')': the
// state is field 3, utime field 14 and stime field 15.
func statCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat %.40q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("stat %.40q: %d fields after the command name, want at least 13", stat, len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: CPU time %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}
