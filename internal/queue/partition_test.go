package queue

import (
	"testing"

	"github.com/redelay/redelay/internal/keys"
)

// TestGeneratedIDsSpread: generated IDs fall evenly into the partitions
// (within 5 % of an even share each, for 8 and for 3 partitions).
func TestGeneratedIDsSpread(t *testing.T) {
	const ids = 80_000
	for _, n := range []int{3, 8} {
		counts := make([]int, n)
		for range ids {
			counts[keys.PartitionOf(NewID(), n)]++
		}
		even := ids / n
		for p, c := range counts {
			if c < even*95/100 || c > even*105/100 {
				t.Errorf("%d partitions: partition %d got %d of %d generated IDs (even: %d): %v", n, p, c, ids, even, counts)
			}
		}
		t.Logf("%d partitions: %v", n, counts)
	}
}
