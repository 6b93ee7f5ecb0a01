// Package osproc holds what differs between operating systems in running
// a child process and in measuring this one, for the test harness and the
// benchmarks: Linux's parent-death signal ([DieWithParent]) and the CPU
// time this process has used ([CPU]). Each is in a file per OS.
package osproc
