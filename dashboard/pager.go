package dashboard

import (
	"slices"

	"github.com/redelay/redelay/inspect"
)

// pageSizes are the page sizes a queue's page offers.
var pageSizes = []int{25, 50, 100, 250, 500, 1000}

// pagerSpan is how many pages on each side of the current one the pager
// links to.
const pagerSpan = 2

// pager is the navigation of a queue's pages of items.
type pager struct {
	Page  int // from 1
	Pages int // how many pages the state's count makes; at least 1
	// The links to the first, previous, next and last pages; "" where
	// there is none.
	First, Prev, Next, Last string
	Nums                    []pageLink // the pages around the current one
	Sizes                   []int      // the page sizes to choose from
	Limit                   int
	// Jump: the form that picks a page and a page size is worth showing.
	Jump bool
}

// pageLink is a link to one page.
type pageLink struct {
	N       int
	URL     string
	Current bool
}

// newPager returns the pager of the items of queue in state st, shown
// limit at a time from offset, n of them in all (as Stats counted them).
// An offset that is no multiple of limit (a link of an older page) counts
// as the page it falls in.
func newPager(l links, queue string, st inspect.State, offset, limit int, n int64) pager {
	p := pager{Page: offset/limit + 1, Pages: max(1, int((n+int64(limit)-1)/int64(limit))), Limit: limit}
	p.Sizes = pageSizes
	if !slices.Contains(p.Sizes, limit) {
		p.Sizes = append(slices.Clone(pageSizes), limit)
		slices.Sort(p.Sizes)
	}
	at := func(page int) string { return l.Tab(queue, st, (page-1)*limit, limit) }
	if offset > 0 {
		p.First = at(1)
		p.Prev = l.Tab(queue, st, max(0, offset-limit), limit)
	}
	if p.Page < p.Pages {
		p.Next = at(p.Page + 1)
		p.Last = at(p.Pages)
	}
	for i := max(1, p.Page-pagerSpan); i <= min(p.Pages, p.Page+pagerSpan); i++ {
		p.Nums = append(p.Nums, pageLink{N: i, URL: at(i), Current: i == p.Page})
	}
	p.Jump = p.Pages > 1 || n > int64(pageSizes[0])
	return p
}
