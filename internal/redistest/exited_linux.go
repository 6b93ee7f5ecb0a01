//go:build linux

package redistest

import (
	"os"
	"strconv"
	"strings"
)

// exited reports whether the child process pid has exited (and is waiting
// to be reaped), without reaping it.
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain them.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state == 'Z' || state == 'X'
}
