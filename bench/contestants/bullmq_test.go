package contestants

import (
	"os/exec"
	"testing"
	"time"
)

func TestBullMQ(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node not found on PATH: the BullMQ contestant needs Node.js 20 or newer and npm")
	}
	exerciseContestant(t, "bullmq", 60*time.Second, 0)
}
