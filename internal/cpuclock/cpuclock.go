// Package cpuclock reads the CPU time the process has used: the measure of a run's cost that holds on a machine
// shared with other work, where wall time says as much about the neighbours as about the run.
package cpuclock

import "time"

// Process returns the CPU time, user and system, that all threads of the process have used since it started;
// ok is false where the platform cannot say.
func Process() (d time.Duration, ok bool) { return process() }

// Since returns the CPU time the process has used since the reading from, 0 where the platform cannot say.
func Since(from time.Duration) time.Duration {
	now, ok := Process()
	if !ok {
		return 0
	}
	return now - from
}
