// Package lua holds every Redis script of redelay, one file per operation,
// embedded at build time. Each file's header lists its KEYS, ARGV and output.
//
// Scripts are run by internal/store: EVALSHA first, EVAL when the server
// answers NOSCRIPT (after a restart or failover). Every key a script touches
// is passed in KEYS and shares the queue's hash tag, so each call runs on one
// Cluster slot. Every script reads each key it writes before its first
// write, so that a key of the wrong type makes the call fail before it
// changes anything (Redis does not roll back a script's earlier writes).
package lua

import (
	_ "embed"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed prelude.lua
	prelude string
	//go:embed offer.lua
	offerSrc string
	//go:embed transfer.lua
	transferSrc string
	//go:embed remove.lua
	removeSrc string
	//go:embed receive.lua
	receiveSrc string
	//go:embed pop.lua
	popSrc string
	//go:embed giveback.lua
	givebackSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed settle.lua
	settleSrc string
	//go:embed reclaim.lua
	reclaimSrc string
	//go:embed redrive.lua
	redriveSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed unclaim.lua
	unclaimSrc string
	//go:embed get.lua
	getSrc string
	//go:embed list.lua
	listSrc string
	//go:embed reschedule.lua
	rescheduleSrc string
	//go:embed update.lua
	updateSrc string
	//go:embed stats.lua
	statsSrc string
	//go:embed size.lua
	sizeSrc string
	//go:embed pause.lua
	pauseSrc string
	//go:embed purge.lua
	purgeSrc string
	//go:embed requeue.lua
	requeueSrc string
	//go:embed upsert.lua
	upsertSrc string
	//go:embed schedule_put.lua
	schedulePutSrc string
	//go:embed schedule_advance.lua
	scheduleAdvanceSrc string
	//go:embed schedule_remove.lua
	scheduleRemoveSrc string
	//go:embed partitions.lua
	partitionsSrc string
	//go:embed schedule_park.lua
	scheduleParkSrc string
	//go:embed ack.lua
	ackSrc string
	//go:embed confirm.lua
	confirmSrc string
	//go:embed groups.lua
	groupsSrc string
	//go:embed group_pause.lua
	groupPauseSrc string
	//go:embed group_purge.lua
	groupPurgeSrc string
	//go:embed group_list.lua
	groupListSrc string
	//go:embed unlease.lua
	unleaseSrc string
	//go:embed consumers.lua
	consumersSrc string
	//go:embed forget.lua
	forgetSrc string
	//go:embed unannounce.lua
	unannounceSrc string
)

// Scripts are immutable after construction (source and SHA only). Each is
// its own file preceded by the definitions of prelude.lua it uses (see
// compose).
var (
	Offer           = redis.NewScript(compose(offerSrc))           // offer.lua
	Transfer        = redis.NewScript(compose(transferSrc))        // transfer.lua
	Remove          = redis.NewScript(compose(removeSrc))          // remove.lua
	Receive         = redis.NewScript(compose(receiveSrc))         // receive.lua
	Pop             = redis.NewScript(compose(popSrc))             // pop.lua
	GiveBack        = redis.NewScript(compose(givebackSrc))        // giveback.lua
	Extend          = redis.NewScript(compose(extendSrc))          // extend.lua
	Settle          = redis.NewScript(compose(settleSrc))          // settle.lua
	Reclaim         = redis.NewScript(compose(reclaimSrc))         // reclaim.lua
	Redrive         = redis.NewScript(compose(redriveSrc))         // redrive.lua
	Release         = redis.NewScript(compose(releaseSrc))         // release.lua
	Unclaim         = redis.NewScript(compose(unclaimSrc))         // unclaim.lua
	Get             = redis.NewScript(compose(getSrc))             // get.lua
	List            = redis.NewScript(compose(listSrc))            // list.lua
	Reschedule      = redis.NewScript(compose(rescheduleSrc))      // reschedule.lua
	Update          = redis.NewScript(compose(updateSrc))          // update.lua
	Stats           = redis.NewScript(compose(statsSrc))           // stats.lua
	Size            = redis.NewScript(compose(sizeSrc))            // size.lua
	Pause           = redis.NewScript(compose(pauseSrc))           // pause.lua
	Purge           = redis.NewScript(compose(purgeSrc))           // purge.lua
	Requeue         = redis.NewScript(compose(requeueSrc))         // requeue.lua
	Upsert          = redis.NewScript(compose(upsertSrc))          // upsert.lua
	SchedulePut     = redis.NewScript(compose(schedulePutSrc))     // schedule_put.lua
	ScheduleAdvance = redis.NewScript(compose(scheduleAdvanceSrc)) // schedule_advance.lua
	ScheduleRemove  = redis.NewScript(compose(scheduleRemoveSrc))  // schedule_remove.lua
	Partitions      = redis.NewScript(compose(partitionsSrc))      // partitions.lua
	SchedulePark    = redis.NewScript(compose(scheduleParkSrc))    // schedule_park.lua
	Ack             = redis.NewScript(compose(ackSrc))             // ack.lua
	Confirm         = redis.NewScript(compose(confirmSrc))         // confirm.lua
	Groups          = redis.NewScript(compose(groupsSrc))          // groups.lua
	GroupPause      = redis.NewScript(compose(groupPauseSrc))      // group_pause.lua
	GroupPurge      = redis.NewScript(compose(groupPurgeSrc))      // group_purge.lua
	GroupList       = redis.NewScript(compose(groupListSrc))       // group_list.lua
	Unlease         = redis.NewScript(compose(unleaseSrc))         // unlease.lua
	Consumers       = redis.NewScript(compose(consumersSrc))       // consumers.lua
	Forget          = redis.NewScript(compose(forgetSrc))          // forget.lua
	Unannounce      = redis.NewScript(compose(unannounceSrc))      // unannounce.lua
)

// Offer statuses returned by offer.lua, one per item.
const (
	OfferDuplicate = 0
	OfferPending   = 1
	OfferReady     = 2
	OfferFull      = 3 // refused: the queue is at its bound (blocking.WithMaxSize)
)

// Upsert outcomes returned by upsert.lua (0 to 2 as OfferDuplicate,
// OfferPending, OfferReady).
const (
	UpsertReplacedPending = 3
	UpsertReplacedReady   = 4
	UpsertFull            = 5 // refused: the queue is at its bound
)

// Reschedule outcomes returned by reschedule.lua.
const (
	RescheduleNotFound = 0
	ReschedulePending  = 1
	RescheduleReady    = 2
)

// Settle outcomes returned by settle.lua.
const (
	SettleLeaseLost = 0
	SettlePending   = 1
	SettleReady     = 2
	SettleDead      = 3
)

// SeqLen is the width of the sequence prefix on the members of the
// delayed set and the priority set, and on items-hash values (the offer
// counter as 6 big-endian bytes; SEQ_LEN in prelude.lua).
const SeqLen = 6

// A script runs its whole text on every call, and each function definition
// in it allocates a closure: the whole prelude would cost every call more
// than most scripts' own work (docs/decisions.md, "Priorities"). So each
// script gets only the prelude's definitions it names, directly or through
// other definitions.

// definition is one top-level definition of prelude.lua: a line starting
// with "local " at column 0, the comment lines right above it, and the
// lines down to the next definition.
type definition struct {
	name string
	text string
}

var defStart = regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)

// definitions splits prelude.lua into its definitions, in order.
func definitions(src string) []definition {
	lines := strings.SplitAfter(src, "\n")
	var defs []definition
	start := 0 // first line of the pending definition (with its comments)
	for i, l := range lines {
		m := defStart.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		// The comment lines right above belong to this definition.
		c := i
		for c > start && strings.HasPrefix(lines[c-1], "--") {
			c--
		}
		if len(defs) > 0 {
			defs[len(defs)-1].text = strings.Join(lines[start:c], "")
		}
		defs = append(defs, definition{name: m[1]})
		start = c
	}
	if len(defs) > 0 {
		defs[len(defs)-1].text = strings.Join(lines[start:], "")
	}
	return defs
}

// compose returns src preceded by the definitions of prelude.lua it names
// (see names), directly or through other definitions, in the prelude's
// order.
func compose(src string) string {
	defs := definitions(prelude)
	index := make(map[string]int, len(defs))
	for i, d := range defs {
		index[d.name] = i
	}
	used := make([]bool, len(defs))
	var visit func(text string)
	visit = func(text string) {
		for _, w := range names(text) {
			if i, ok := index[w]; ok && !used[i] {
				used[i] = true
				visit(defs[i].text)
			}
		}
	}
	visit(src)
	var b strings.Builder
	consts := map[string]string{}
	for i, d := range defs {
		if !used[i] {
			continue
		}
		if m := constDef.FindStringSubmatch(strings.TrimSpace(withoutComments(d.text))); m != nil {
			consts[m[1]] = m[2]
			continue
		}
		b.WriteString(d.text)
	}
	b.WriteString(src)
	return inline(b.String(), consts)
}

// constDef is a definition of a constant: an upper-case name given a
// decimal integer or a one-line string in single quotes. compose writes the
// value in place of each use instead (inline): a local that functions use
// is an upvalue of each of them, which each call of the script finds anew
// when it builds them (Lua 5.1 folds no constants).
var constDef = regexp.MustCompile(`^local ([A-Z][A-Z0-9_]*) = ([0-9]+|'(?:[^'\\\n]|\\[0-9]{1,3})*')$`)

// inline returns src with each use of a constant of consts (by name: not a
// field, nor in a string or a comment) replaced by its value.
func inline(src string, consts map[string]string) string {
	if len(consts) == 0 {
		return src
	}
	return scan(src, true, func(w string, field bool) string {
		if v, ok := consts[w]; ok && !field {
			return v
		}
		return w
	})
}

// names returns the identifiers Lua source names that may be top-level
// definitions of the prelude: not those in comments, nor field names
// (X.expired names a field of X, not the function expired). Each definition
// composed into a script is a closure built on every call of it, so a
// definition named only in a comment or as a field would cost every call.
func names(src string) []string {
	var out []string
	scan(src, false, func(w string, field bool) string {
		if !field {
			out = append(out, w)
		}
		return w
	})
	return out
}

// withoutComments returns Lua source without its comments.
func withoutComments(src string) string { return scan(src, false, nil) }

// scan returns Lua source with each name of its code (not in a string or a
// comment, nor the letters of a number) replaced by what word returns for
// it, told whether it is a field (X.name; x..name is a concatenation);
// word nil keeps every name. Comments (from "--" outside a string to the
// end of the line) are kept with keepComments, else dropped. The scripts
// use no long brackets, [[...]], for strings or comments;
// TestNoLongBrackets keeps it so.
func scan(src string, keepComments bool, word func(w string, field bool) string) string {
	var b strings.Builder
	b.Grow(len(src))
	for i := 0; i < len(src); {
		c := src[i]
		j := i + 1
		switch {
		case c == '\'' || c == '"': // a string, to its closing quote or the line's end
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(src) && src[j] == c {
				j++
			}
		case c == '-' && j < len(src) && src[j] == '-': // a comment
			j = len(src)
			if k := strings.IndexByte(src[i:], '\n'); k >= 0 {
				j = i + k
			}
			if !keepComments {
				i = j
				continue
			}
		case c >= '0' && c <= '9': // a number
			for j < len(src) && (isWordByte(src[j]) || src[j] == '.') {
				j++
			}
		case isWordByte(c): // a name
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			if word != nil {
				field := i > 0 && src[i-1] == '.' && (i < 2 || src[i-2] != '.')
				b.WriteString(word(src[i:j], field))
				i = j
				continue
			}
		}
		j = min(j, len(src))
		b.WriteString(src[i:j])
		i = j
	}
	return b.String()
}

// isWordByte tells the bytes of Lua names (and of the letters in numbers).
func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
