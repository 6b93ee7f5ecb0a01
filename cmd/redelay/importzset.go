package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/delayed"
)

// maxImportID is the longest member used as an item's ID as it is; longer
// members, and the empty one, get a digest (the library's bounds on an ID).
const maxImportID = 256

// importJSON is what import-zset reports with -o json.
type importJSON struct {
	Source         string `json:"source"`
	Queue          string `json:"queue"`
	Moved          int    `json:"moved"`
	AlreadyPending int    `json:"already_pending"`
}

// importZSetCommand returns the import-zset command.
func (a *app) importZSetCommand() *cobra.Command {
	var unit string
	var batch int
	cmd := &cobra.Command{
		Use:   "import-zset SOURCE QUEUE",
		Short: "Move the members of a polled sorted set into a queue, once",
		Long: `Move every member of the sorted set SOURCE (a hand-written delayed queue:
each score a due time) into QUEUE as a delayed item: the member's bytes are the
item's value, stored as they are (consumers read them with codec.Raw(), or with
codec.JSON() when the members are JSON); the member is its ID (an empty member,
or one longer than 256 bytes, gets "sha256:" and its digest); the score in --unit is its due
time. Earliest first, --batch members at a time; each member leaves SOURCE once
its offer succeeded.

Run it again after a crash or an interruption: a member already offered and
still pending is refused as a duplicate and only removed from SOURCE. Stop the
processes that poll SOURCE first. Consumers that decode msgpack (the library's
default codec) cannot read the members: a member they cannot decode is retried,
then dead-lettered, not lost.`,
		Args: exactArgs("SOURCE", "QUEUE"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			scale, ok := map[string]float64{"s": 1e6, "ms": 1e3, "us": 1}[unit]
			if !ok {
				return usageErrorf("--unit %q: want s, ms or us", unit)
			}
			if batch < 1 || batch > 10000 {
				return usageErrorf("--batch %d: want 1 to 10000", batch)
			}
			return a.importZSet(cmd, args[0], args[1], scale, batch)
		}),
	}
	cmd.Flags().StringVar(&unit, "unit", "s", "unit of SOURCE's scores: s, ms or us (Unix time)")
	cmd.Flags().IntVar(&batch, "batch", 500, "members read and moved at a time")
	return cmd
}

// importZSet moves source's members into queue, batch at a time, each
// Redis call bounded by --timeout.
func (a *app) importZSet(cmd *cobra.Command, source, queue string, scale float64, batch int) error {
	c, err := a.connect(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	q := blocking.New[[]byte](c.rdb, queue, blocking.WithPrefix(a.flags.prefix), blocking.WithCodec(codec.Raw()))
	defer q.Close()
	dq := delayed.New(q, delayed.WithoutTransfer())
	defer dq.Close()
	call := func(f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(cmd.Context(), a.flags.timeout)
		defer cancel()
		return c.wrap(f(ctx), a.flags.timeout.String())
	}
	// A queue that cannot be opened (a bad name) is refused before any
	// member is read.
	if err := call(func(ctx context.Context) error {
		_, err := dq.Size(ctx)
		return err
	}); errors.Is(err, blocking.ErrInvalidQueue) {
		return usageErrorf("import-zset %q: %s", queue, strings.TrimPrefix(message(errors.Unwrap(err)), "redelay: invalid queue: "))
	} else if err != nil {
		return err
	}
	out := importJSON{Source: source, Queue: queue}
	for {
		var zs []redis.Z
		if err := call(func(ctx context.Context) error {
			var err error
			zs, err = c.rdb.ZRangeWithScores(ctx, source, 0, int64(batch-1)).Result()
			return err
		}); err != nil {
			return fmt.Errorf("read %s: %w", source, err)
		}
		if len(zs) == 0 {
			break
		}
		for _, z := range zs {
			member, _ := z.Member.(string)
			us := z.Score * scale
			if math.IsNaN(us) || us < 0 || us > 1<<53 {
				return fmt.Errorf("member %s of %s: score %v is no due time in --unit (moved %d so far)", oneLine(member, 60), source, z.Score, out.Moved)
			}
			id := member
			if id == "" || len(id) > maxImportID {
				sum := sha256.Sum256([]byte(member))
				id = "sha256:" + hex.EncodeToString(sum[:])
			}
			err := call(func(ctx context.Context) error {
				_, err := dq.OfferAt(ctx, []byte(member), time.UnixMicro(int64(us)), delayed.WithID(id))
				return err
			})
			switch {
			case errors.Is(err, delayed.ErrDuplicate):
				out.AlreadyPending++
			case err != nil:
				return fmt.Errorf("offer member %s: %w (moved %d so far; run again to go on)", oneLine(member, 60), err, out.Moved)
			default:
				out.Moved++
			}
			if err := call(func(ctx context.Context) error { return c.rdb.ZRem(ctx, source, member).Err() }); err != nil {
				return fmt.Errorf("remove member %s from %s: %w (run again to go on)", oneLine(member, 60), source, err)
			}
		}
	}
	w := cmd.OutOrStdout()
	if a.json() {
		return writeJSON(w, out)
	}
	_, err = fmt.Fprintf(w, "moved %s of %s into queue %q (%d already pending there)\n", count(int64(out.Moved), "member"), source, queue, out.AlreadyPending)
	return err
}
