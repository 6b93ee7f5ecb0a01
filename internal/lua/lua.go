// Package lua holds every Redis script of redelay, one file per operation,
// embedded at build time. Each file's header lists its KEYS, ARGV and output.
//
// Scripts run through redis.Script: EVALSHA first, EVAL when the server
// answers NOSCRIPT (after a restart or failover). Every key a script touches
// is passed in KEYS and shares the queue's hash tag, so each call runs on one
// Cluster slot.
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
	//go:embed push.lua
	pushSrc string
	//go:embed transfer.lua
	transferSrc string
	//go:embed remove.lua
	removeSrc string
	//go:embed receive.lua
	receiveSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed nack.lua
	nackSrc string
	//go:embed reclaim.lua
	reclaimSrc string
	//go:embed redrive.lua
	redriveSrc string
	//go:embed release.lua
	releaseSrc string
)

// Scripts are immutable after construction (source and SHA only). Each is
// the shared prelude.lua followed by its own file.
var (
	Offer    = redis.NewScript(prelude + offerSrc)    // offer.lua
	Push     = redis.NewScript(prelude + pushSrc)     // push.lua
	Transfer = redis.NewScript(prelude + transferSrc) // transfer.lua
	Remove   = redis.NewScript(prelude + removeSrc)   // remove.lua
	Receive  = redis.NewScript(prelude + receiveSrc)  // receive.lua
	Extend   = redis.NewScript(prelude + extendSrc)   // extend.lua
	Nack     = redis.NewScript(prelude + nackSrc)     // nack.lua
	Reclaim  = redis.NewScript(prelude + reclaimSrc)  // reclaim.lua
	Redrive  = redis.NewScript(prelude + redriveSrc)  // redrive.lua
	Release  = redis.NewScript(prelude + releaseSrc)  // release.lua
)

// Offer statuses returned by offer.lua, one per item.
const (
	OfferDuplicate = 0
	OfferPending   = 1
	OfferReady     = 2
)

// Nack outcomes returned by nack.lua.
const (
	NackLeaseLost = 0
	NackPending   = 1
	NackReady     = 2
	NackDead      = 3
)

// SeqLen is the width of the sequence prefix on delayed-set members and
// items-hash values (the offer counter as 6 big-endian bytes; SEQ_LEN in
// prelude.lua).
const SeqLen = 6
