// Package keys builds the Redis key names of a queue. It is the only place
// that knows the layout (documented in docs/keys.md).
//
// Every key of a queue named N carries the hash tag {N}, so all of them live
// in one Redis Cluster slot and every script touches a single slot:
//
//	redelay:{N}:ready         LIST   items ready to take (pushed left, popped right)
//	redelay:{N}:prio          ZSET   ready items of priority 1..9: member ready-seq(6 bytes)+envelope,
//	                                 score (9-priority)*2^48 + 2^47 +/- ready-seq (taken before ready)
//	redelay:{N}:delayed       ZSET   member seq(6 bytes)+ID, score due time in Unix µs
//	redelay:{N}:items         HASH   ID -> seq(6 bytes)+envelope, for delayed items
//	redelay:{N}:seq           STRING offer counter, orders ties by offer order
//	redelay:{N}:retry         ZSET   member len+nonce+envelope, score due time in Unix µs
//	redelay:{N}:leases        ZSET   lease token -> lease deadline in Unix ms
//	redelay:{N}:inflight      HASH   lease token -> envelope of a received item
//	redelay:{N}:claimed       LIST   items a waiting consumer popped, not yet leased or taken
//	redelay:{N}:claimed:seen  HASH   envelope in claimed -> when the reclaimer first saw it (ms)
//	redelay:{N}:meta          HASH   what every process shares: max_attempts, paused, codec;
//	                                 processed, failed (totals of settled items)
//	redelay:{N}:history       HASH   '<minute>p' / '<minute>f' -> items processed / failed in
//	                                 that minute (Unix ms / 60000), the last 24 h (expires)
//	redelay:{N}:schedules     HASH   recurring schedule name -> its state (JSON: spec, next, last, missed)
//	redelay:{N}:schedules:values HASH schedule name -> the envelope its ticks carry (ID left empty)
//	redelay:{N}:schedules:due ZSET   schedule name -> when its next tick must be materialized (Unix ms)
//	redelay:{N}:lane:<L>      STRING the last offer call of lane L and its outcome (expires)
//	redelay:{N}:unique:<ID>   STRING an ID offered WithUniqueFor, until its window ends (expires)
//	redelay:{N}:batch:<T>     STRING a bounded batch's pass between its offer calls (expires)
//	redelay:{N}:rate          STRING when the next delivery may start under WithRateLimit, Unix µs (expires)
//	redelay:{N}:slots         LIST   wake-ups for consumers waiting under WithGlobalConcurrency (capped)
//	redelay:{N}:wake          pub/sub channel (not a key): earliest due time changed
//
// A child queue (the dead letters of N) keeps the parent's tag:
// redelay:{N}:dead:ready and so on.
//
// A queue opened with blocking.WithPartitions(n), n > 1, keeps n such key
// sets. Partition 0 is the set above; partition i >= 1 uses the hash tag
// {N{i} (Redis takes the tag from the first '{' to the next '}', so the tag
// is "N{i", and no valid name, which has no braces, collides with it):
//
//	redelay:{N{3}:ready       and so on, every key above, dead letters included
//
// Partition 0's meta hash records n in its field "partitions".
//
// Two keys belong to no queue:
//
//	redelay:queues            ZSET   queue name -> when a process last announced it (Unix ms)
//	redelay:consumers         HASH   consumer ID -> last seen (Unix ms) + ' ' + its record (JSON):
//	                                 the processes consuming (internal/lua/consumers.lua)
//
// A queue opened with a prefix of its own (blocking.WithPrefix("tenant-b"))
// has the same keys with "tenant-b" in place of "redelay", its registry
// included (tenant-b:queues): queues of one name under two prefixes share
// no key, and an inspector given the prefix sees only its queues.
package keys

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"
	"unicode/utf8"
)

// Prefix starts every key of a queue opened without a prefix of its own.
const Prefix = "redelay"

// Registry is the sorted set of every queue's name under the default
// prefix, announced by the processes that use them (see internal/store).
const Registry = Prefix + ":queues"

// ConsumersOf is the registry of consumers under prefix ("" is Prefix).
func ConsumersOf(prefix string) string {
	if prefix == "" {
		prefix = Prefix
	}
	return prefix + ":consumers"
}

// MaxPrefixLen bounds a key prefix, in bytes.
const MaxPrefixLen = 64

// RegistryOf is the registry of queues under prefix ("" is Prefix).
func RegistryOf(prefix string) string {
	if prefix == "" {
		prefix = Prefix
	}
	return prefix + ":queues"
}

// ValidatePrefix reports why p cannot prefix keys: empty, longer than
// MaxPrefixLen, not UTF-8, or containing braces (a brace would move the
// hash tag), whitespace, control characters or ':' at either end.
func ValidatePrefix(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrInvalidPrefix)
	case len(p) > MaxPrefixLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidPrefix, len(p), MaxPrefixLen)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w %q: not UTF-8", ErrInvalidPrefix, p)
	case p[0] == ':' || p[len(p)-1] == ':':
		return fmt.Errorf("%w %q: starts or ends with ':'", ErrInvalidPrefix, p)
	}
	for _, r := range p {
		if r == '{' || r == '}' || r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 {
			return fmt.Errorf("%w %q: contains %q", ErrInvalidPrefix, p, r)
		}
	}
	return nil
}

// Fields of a queue's meta hash.
const (
	MetaMaxAttempts = "max_attempts"
	MetaPaused      = "paused"
	MetaCodec       = "codec"
	// MetaPartitions, in partition 0's meta hash only, is the queue's
	// number of partitions, recorded by the first process that opened it
	// (absent in a queue no process of this version opened: one).
	MetaPartitions = "partitions"
	// MetaDeadMax and MetaDeadMaxAge are the dead-letter bounds
	// (blocking.WithDeadLetterBounds): at most this many, none older than
	// this many ms; MetaDeadDropped counts what they dropped.
	MetaDeadMax     = "dead_max"
	MetaDeadMaxAge  = "dead_max_age_ms"
	MetaDeadDropped = "dead_dropped"
	// MetaGroupLimit and MetaGroupInterval are the queue's group limits
	// (blocking.WithGroupConcurrency, WithGroupRateLimit; see Groups in
	// internal/lua/prelude.lua), in leases and µs.
	MetaGroupLimit = "group_limit"
	// MetaGroups marks a queue that has had a grouped item: from then on
	// its items without a group are the group "".
	MetaGroups        = "groups"
	MetaGroupInterval = "group_interval_us"
)

// MaxPartitions bounds the number of partitions of one queue.
const MaxPartitions = 256

// MaxNameLen bounds a queue name, in bytes.
const MaxNameLen = 200

// ErrInvalidName is returned for a queue name that cannot be used.
var ErrInvalidName = errors.New("invalid queue name")

// ErrInvalidPrefix is returned for a key prefix that cannot be used.
var ErrInvalidPrefix = errors.New("invalid key prefix")

// Set holds the key names of one queue (one partition of it: see Partition).
type Set struct {
	Name     string // the queue's name as given (child: parent name + ":" + child)
	Ready    string
	Prio     string
	Delayed  string
	Items    string
	Seq      string
	Retry    string
	Leases   string
	Inflight string
	Claimed  string
	Seen     string
	Meta     string
	History  string // processed and failed per minute
	Rate     string // WithRateLimit's next start
	Slots    string // WithGlobalConcurrency's wake-ups
	// Schedules holds the recurring schedules: name -> JSON state;
	// ScheduleValues name -> the envelope each tick carries; ScheduleDue
	// name -> when the schedule's next tick must be materialized (ms).
	Schedules      string
	ScheduleValues string
	ScheduleDue    string
	Wake           string // pub/sub channel
	// The keys of the queue's groups (see internal/lua/prelude.lua,
	// Groups); a group's ready items are under GroupItems.
	GTurn, GSize, GFlight, GTok, GPaused, GWait string
	// Part is the partition these keys belong to: 0 for a queue of one
	// partition, and for partition 0 of any queue.
	Part int
	// DeadReady is the ready list of the dead-letter queue (Dead().Ready),
	// built once: scripts on hot paths name it on every call. DeadPrio is
	// its priority set (Dead().Prio), where it keeps the dead letters of
	// priority it gave back.
	DeadReady string
	DeadPrio  string
	// Prefix replaces "redelay" at the start of every key; Registry is
	// the registry of queues under it.
	Prefix   string
	Registry string
	tag      string
	base     string
}

// New validates name and returns its keys under the default prefix.
func New(name string) (Set, error) { return For(Prefix, name) }

// For validates prefix and name and returns the keys of the queue name
// under prefix ("" is Prefix).
func For(prefix, name string) (Set, error) {
	if prefix == "" {
		prefix = Prefix
	}
	if err := ValidatePrefix(prefix); err != nil {
		return Set{}, err
	}
	if err := Validate(name); err != nil {
		return Set{}, err
	}
	tag := "{" + name + "}"
	return build(prefix, name, tag, prefix+":"+tag), nil
}

// Child returns the keys of a queue that shares q's hash tag, such as the
// dead letters.
func (q Set) Child(sub string) Set {
	c := build(q.Prefix, q.Name+":"+sub, q.tag, q.base+":"+sub)
	c.Part = q.Part
	return c
}

// Partition returns the keys of partition i of the queue q (not of a
// child): q itself for i == 0, else the same key names under the hash tag
// {N{i}. Name stays the queue's name.
func (q Set) Partition(i int) Set {
	if i == 0 {
		return q
	}
	tag := "{" + q.Name + "{" + strconv.Itoa(i) + "}"
	p := build(q.Prefix, q.Name, tag, q.Prefix+":"+tag)
	p.Part = i
	return p
}

// PartitionOf returns the partition (0..n-1) of the item with this ID in a
// queue of n partitions: 0 for a recurring schedule's tick (IsTickID),
// which partition 0's transfer materializes there, else FNV-1a of the ID,
// modulo n. The mapping is part of the stored format: every process and
// the inspector must agree on it.
func PartitionOf(id string, n int) int {
	if n <= 1 || IsTickID(id) {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id)) // never fails
	return int(h.Sum32() % uint32(n))
}

// TickIDLayout is the time layout that ends the ID of a recurring
// schedule's tick: the schedule's name, '@', and the tick's time in UTC
// (internal/schedule.TickID).
const TickIDLayout = "2006-01-02T15:04:05.000Z"

// IsTickID reports whether id has the shape of a recurring schedule's tick
// ID: anything, '@', then a valid time in TickIDLayout. An item offered
// with such an ID of one's own is routed as a tick is.
func IsTickID(id string) bool {
	const l = len(TickIDLayout)
	if len(id) <= l || id[len(id)-l-1] != '@' || id[len(id)-1] != 'Z' {
		return false
	}
	_, err := time.Parse(TickIDLayout, id[len(id)-l:])
	return err == nil
}

// GroupItems returns the key of the ready items of group g (blocking.WithGroup).
func (q Set) GroupItems(g string) string { return q.base + ":g:" + g }

// Dead returns the keys of q's dead-letter queue.
func (q Set) Dead() Set { return q.Child("dead") }

// Unique returns the key that holds id for delayed.WithUniqueFor's window
// (see internal/lua/upsert.lua).
func (q Set) Unique(id string) string { return q.base + ":unique:" + id }

// Lane returns the key that records the last offer call sent on lane l (see
// internal/lua/offer.lua): l names one producer's in-flight call slot.
func (q Set) Lane(l string) string { return q.base + ":lane:" + l }

// Pass returns the key a bounded batch's first offer call leaves for its
// later calls (see internal/lua/offer.lua): t names the batch.
func (q Set) Pass(t string) string { return q.base + ":batch:" + t }

func build(prefix, name, tag, base string) Set {
	return Set{
		Prefix:         prefix,
		Registry:       RegistryOf(prefix),
		Name:           name,
		Ready:          base + ":ready",
		Prio:           base + ":prio",
		Delayed:        base + ":delayed",
		Items:          base + ":items",
		Seq:            base + ":seq",
		Retry:          base + ":retry",
		Leases:         base + ":leases",
		Inflight:       base + ":inflight",
		Claimed:        base + ":claimed",
		Seen:           base + ":claimed:seen",
		Meta:           base + ":meta",
		History:        base + ":history",
		Rate:           base + ":rate",
		Slots:          base + ":slots",
		Schedules:      base + ":schedules",
		ScheduleValues: base + ":schedules:values",
		ScheduleDue:    base + ":schedules:due",
		Wake:           base + ":wake",
		GTurn:          base + ":gturn",
		GSize:          base + ":gsize",
		GFlight:        base + ":gflight",
		GTok:           base + ":gtok",
		GPaused:        base + ":gpaused",
		GWait:          base + ":gwait",
		DeadReady:      base + ":dead:ready",
		DeadPrio:       base + ":dead:prio",
		tag:            tag,
		base:           base,
	}
}

// Validate reports why name cannot be a queue name: empty, longer than
// MaxNameLen, not UTF-8, or containing braces (they would break the hash
// tag), whitespace or control characters.
func Validate(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidName, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %q is not UTF-8", ErrInvalidName, name)
	}
	for _, r := range name {
		if r == '{' || r == '}' || r <= ' ' || r == 0x7f {
			return fmt.Errorf("%w: %q contains %q", ErrInvalidName, name, r)
		}
	}
	return nil
}
