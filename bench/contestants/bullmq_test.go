package contestants

import (
	"os/exec"
	"testing"
	"time"
)

func TestBullMQ(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found on PATH")
	}
	exerciseContestant(t, "bullmq", 60*time.Second)
}
