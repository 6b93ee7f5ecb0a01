package store

import "github.com/redelay/redelay/internal/lua"

// OfferStatus is what offer.lua (and upsert.lua) did with one item. The
// two scripts share 0 to 2; from 3 on, each has its own meaning.
type OfferStatus int64

// Offer statuses.
const (
	OfferDuplicate        OfferStatus = lua.OfferDuplicate // not stored: the ID is pending (or was offered within the unique window)
	OfferPending          OfferStatus = lua.OfferPending   // stored in the delayed set
	OfferReady            OfferStatus = lua.OfferReady     // stored ready
	OfferFull             OfferStatus = lua.OfferFull      // refused: the queue is at its bound
	UpsertReplacedPending OfferStatus = lua.UpsertReplacedPending
	UpsertReplacedReady   OfferStatus = lua.UpsertReplacedReady
	UpsertFull            OfferStatus = lua.UpsertFull // refused: the queue is at its bound
)

// SettleOutcome is what settle.lua did with a failed delivery.
type SettleOutcome int64

// Settle outcomes.
const (
	SettleLost    SettleOutcome = lua.SettleLeaseLost // the lease was gone: nothing changed
	SettlePending SettleOutcome = lua.SettlePending   // retried later
	SettleReady   SettleOutcome = lua.SettleReady     // retried at once
	SettleDead    SettleOutcome = lua.SettleDead      // dead-lettered
)

// RescheduleOutcome is what reschedule.lua did.
type RescheduleOutcome int64

// Reschedule outcomes.
const (
	RescheduleNotFound RescheduleOutcome = lua.RescheduleNotFound
	ReschedulePending  RescheduleOutcome = lua.ReschedulePending
	RescheduleReady    RescheduleOutcome = lua.RescheduleReady
)
