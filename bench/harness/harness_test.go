package harness

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redelay/redelay/bench/contestants"
)

// fake is an in-memory contestant: items are delivered by a 5 ms poll. With
// faulty set, every delivery arrives twice and offers of even ids due over
// an hour away fail.
type fake struct {
	name   string
	faulty bool

	mu      sync.Mutex
	pending map[int]time.Time
	stop    chan struct{}
	wg      sync.WaitGroup
}

func init() {
	contestants.Register("test-fake-clean", func() contestants.Contestant { return &fake{name: "test-fake-clean"} })
	contestants.Register("test-fake-faulty", func() contestants.Contestant { return &fake{name: "test-fake-faulty", faulty: true} })
}

func (f *fake) Name() string     { return f.name }
func (f *fake) Settings() string { return "in memory" }
func (f *fake) SetPadding(int)   {}

func (f *fake) Setup(context.Context, string) error {
	f.pending, f.stop = map[int]time.Time{}, make(chan struct{})
	return nil
}

func (f *fake) Offer(_ context.Context, id int, due time.Time) error {
	if f.faulty && id%2 == 0 && time.Until(due) > time.Hour {
		return errors.New("refused")
	}
	f.mu.Lock()
	f.pending[id] = due
	f.mu.Unlock()
	return nil
}

func (f *fake) Cancel(_ context.Context, id int) error {
	f.mu.Lock()
	delete(f.pending, id)
	f.mu.Unlock()
	return nil
}

func (f *fake) Consume(_ context.Context, arrived func(int)) error {
	f.wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
			}
			var due []int
			f.mu.Lock()
			for id, at := range f.pending {
				if !at.After(time.Now()) {
					due = append(due, id)
					delete(f.pending, id)
				}
			}
			f.mu.Unlock()
			for _, id := range due {
				arrived(id)
				if f.faulty {
					arrived(id)
				}
			}
		}
	})
	return nil
}

func (f *fake) Close() error {
	if f.stop != nil {
		close(f.stop)
	}
	f.wg.Wait()
	return nil
}

func tinyConfig(only string) Config {
	return Config{Mode: "test", OfferN: 100, BurstN: 100, TrickleN: 20, TrickleSpan: 500 * time.Millisecond,
		Backlogs: []int{50}, LatencyM: 5, TransferK: 10, CancelM: 5, CeilingN: 1000, Producers: 4,
		MemoryN: 100, ValueBytes: 16, Only: []string{only}}
}

func TestRunClean(t *testing.T) {
	res, err := Run(context.Background(), tinyConfig("test-fake-clean"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Errorf("problems on a clean run: %q", res.Problems)
	}
	if len(res.Memory) != 2 {
		t.Errorf("memory rows: %+v, want the tiny and the padded one", res.Memory)
	}
}

func TestRunFaulty(t *testing.T) {
	res, err := Run(context.Background(), tinyConfig("test-fake-faulty"))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Problems, "\n")
	for _, want := range []string{
		"offer test-fake-faulty p=1: 50 of 100 offers failed",
		"memory test-fake-faulty (16-byte padding): 50 of 100 offers failed",
		"burst test-fake-faulty: 0 of 100 items not delivered within the bound, 100 duplicated",
		"trickle test-fake-faulty: 0 of 20 items not delivered within the bound, 20 duplicated",
		"backlog test-fake-faulty 50: 25 of 50 fill offers failed",
		"backlog test-fake-faulty 50: transfer: 0 of 10 items not delivered within the bound, 10 duplicated",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q; have:\n%s", want, all)
		}
	}
	if md := Markdown(res); !strings.Contains(md, "## Problems") {
		t.Error("results.md has no Problems section")
	}
}

func TestMemoryTable(t *testing.T) {
	res := &Results{Config: Quick(),
		Contestants: []ContestantInfo{{Name: "a"}, {Name: "b"}},
		Memory: []MemoryResult{
			{Contestant: "a", BytesPer: 100},
			{Contestant: "a", ValueBytes: 256, BytesPer: 400.4},
			{Contestant: "b", ValueBytes: 256, Note: "setup: boom"},
		}}
	md := Markdown(res)
	for _, want := range []string{
		"| contestant | Redis bytes / pending item, tiny value | Redis bytes / pending item, 256-byte value | added by the padding | notes |",
		"| a | 100 | 400 | +300 |  |",
		"| b | – | – | – | setup: boom |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
}
