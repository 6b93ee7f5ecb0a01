package redistest

import (
	"context"
	"os"
	"os/exec"

	"github.com/redelay/redelay/internal/osproc"
)

// Rerun returns a command that runs the test binary again, with only the
// test named test (-test.run=^test$, once) and with env (KEY=value each)
// added to this process's environment: a test that must watch a process
// crash, or set what a process fixes when it starts (its time zone), runs
// its child side in a process of its own. The child side tells from env
// that it is the child. The child dies with this process where the OS
// allows it (osproc.DieWithParent); ctx kills it as for [exec.CommandContext].
func Rerun(ctx context.Context, test string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	osproc.DieWithParent(cmd)
	return cmd
}
