//go:build unix

package policy

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user + system). On a
// shared 2-core machine wall time per op swings with the neighbours' load;
// CPU time per op is what a decision really costs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
