// Package seedtest fills queues for tests, through the public API of
// blocking and delayed, so that what a test starts from is written once:
// a queue with one item in every state ([EveryState]), a value offered to
// a queue whose codec is recorded ([OfferAnnounced]), the value the
// benchmarks offer ([BenchValue]), and the receives tests wait on
// ([ReceiveWithin], [ExpectNothing]). Only tests import it.
package seedtest
