package deploy_test

import (
	"testing"

	"github.com/redelay/redelay/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Run(m) }
