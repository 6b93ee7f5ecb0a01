// Package redistest is the test harness for code that talks to Redis.
//
// Tests run against real redis-server processes that the harness starts on
// free loopback ports (127.0.0.1 only), never against mocks. A test that
// cannot start or reach a server fails; it is never skipped.
//
// There are three ways to get a server:
//
//   - [Standalone] and [ClusterClient] return clients to servers shared by
//     every test of the test binary. They are started lazily on first use
//     and stopped by [Run]. Tests sharing them must use distinct keys, for
//     instance names made by [QueueName].
//   - [StartServer] and [StartCluster] start servers dedicated to one test,
//     stopped when the test ends. Use them when a test kills, restarts or
//     reconfigures the server. [StartReplica] adds a replica to such a
//     server; [StartClusterWithReplicas] starts a cluster whose three
//     masters have a replica each.
//   - [Miniredis] starts an embedded miniredis for fast unit tests that do
//     not depend on exact Redis behaviour.
//
// [ForEach] runs a test body once against the standalone server and once
// against the cluster.
//
// A package using the harness calls [Run] from its TestMain:
//
//	func TestMain(m *testing.M) { redistest.Run(m) }
//
// Run stops the shared servers after the tests and fails the test binary if
// goroutines leaked.
//
// The redis-server and redis-cli binaries are taken from the REDIS_SERVER
// and REDIS_CLI environment variables when set, else from PATH. The
// script scripts/test.sh installs them when missing.
//
// Server processes are started with a parent-death signal on Linux
// (osproc.DieWithParent) so that they die with the test binary even when it
// crashes. [Rerun] runs the test binary again for a test's child side.
//
// [StartProxy] puts a fault-injecting TCP proxy in front of a server, for
// tests of failure behaviour: [Proxy.Stall] holds all traffic as a network
// partition would, [Proxy.Cut] resets every connection, and
// [Proxy.DelayReplies] and [Proxy.HoldNextReply] make replies late, for
// instance so that a client's read timeout fires after the server executed
// the command and go-redis resends it.
//
// [StartSentinel] starts a Sentinel deployment dedicated to one test: a
// master, a replica and three sentinels monitoring it as [MasterName], for
// tests that use redis.NewFailoverClient ([Sentinel.Client]).
// [Sentinel.Failover] forces a failover and waits until it is complete;
// killing [Sentinel.Master] makes the sentinels fail over on their own
// within a few seconds.
package redistest
