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
)

// Scripts are immutable after construction (source and SHA only). Each is
// the shared prelude.lua followed by its own file.
var (
	Offer           = redis.NewScript(prelude + offerSrc)           // offer.lua
	Transfer        = redis.NewScript(prelude + transferSrc)        // transfer.lua
	Remove          = redis.NewScript(prelude + removeSrc)          // remove.lua
	Receive         = redis.NewScript(prelude + receiveSrc)         // receive.lua
	Pop             = redis.NewScript(prelude + popSrc)             // pop.lua
	GiveBack        = redis.NewScript(prelude + givebackSrc)        // giveback.lua
	Extend          = redis.NewScript(prelude + extendSrc)          // extend.lua
	Settle          = redis.NewScript(prelude + settleSrc)          // settle.lua
	Reclaim         = redis.NewScript(prelude + reclaimSrc)         // reclaim.lua
	Redrive         = redis.NewScript(prelude + redriveSrc)         // redrive.lua
	Release         = redis.NewScript(prelude + releaseSrc)         // release.lua
	Unclaim         = redis.NewScript(prelude + unclaimSrc)         // unclaim.lua
	Get             = redis.NewScript(prelude + getSrc)             // get.lua
	List            = redis.NewScript(prelude + listSrc)            // list.lua
	Reschedule      = redis.NewScript(prelude + rescheduleSrc)      // reschedule.lua
	Update          = redis.NewScript(prelude + updateSrc)          // update.lua
	Stats           = redis.NewScript(prelude + statsSrc)           // stats.lua
	Pause           = redis.NewScript(prelude + pauseSrc)           // pause.lua
	Purge           = redis.NewScript(prelude + purgeSrc)           // purge.lua
	Requeue         = redis.NewScript(prelude + requeueSrc)         // requeue.lua
	Upsert          = redis.NewScript(prelude + upsertSrc)          // upsert.lua
	SchedulePut     = redis.NewScript(prelude + schedulePutSrc)     // schedule_put.lua
	ScheduleAdvance = redis.NewScript(prelude + scheduleAdvanceSrc) // schedule_advance.lua
	ScheduleRemove  = redis.NewScript(prelude + scheduleRemoveSrc)  // schedule_remove.lua
)

// Offer statuses returned by offer.lua, one per item.
const (
	OfferDuplicate = 0
	OfferPending   = 1
	OfferReady     = 2
)

// Upsert outcomes returned by upsert.lua (0 to 2 as OfferDuplicate,
// OfferPending, OfferReady).
const (
	UpsertReplacedPending = 3
	UpsertReplacedReady   = 4
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

// SeqLen is the width of the sequence prefix on delayed-set members and
// items-hash values (the offer counter as 6 big-endian bytes; SEQ_LEN in
// prelude.lua).
const SeqLen = 6
