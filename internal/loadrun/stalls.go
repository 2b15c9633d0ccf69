package loadrun

import (
	"fmt"
	"runtime"
	"time"
)

// Stalls is what one spinning thread saw of its machine: the gaps over a
// threshold between two reads of the clock, time it wanted to run and did
// not. On an otherwise idle machine they are the floor under any tail
// latency measured there: a virtual machine's host taking its CPUs away
// (which a guest may not count as steal), the kernel's own work.
type Stalls struct {
	Spun      time.Duration // how long the thread spun
	Threshold time.Duration
	Count     int           // gaps over Threshold
	Total     time.Duration // their sum
	Largest   time.Duration
}

// MeasureStalls spins the calling goroutine, locked to its thread, for d,
// reading the clock with now, and returns the gaps over threshold.
func MeasureStalls(d, threshold time.Duration, now func() time.Time) Stalls {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := Stalls{Spun: d, Threshold: threshold}
	start := now()
	for last := start; last.Sub(start) < d; {
		t := now()
		if gap := t.Sub(last); gap > threshold {
			s.Count++
			s.Total += gap
			s.Largest = max(s.Largest, gap)
		}
		last = t
	}
	return s
}

func (s Stalls) String() string {
	return fmt.Sprintf("%s of one spinning thread: %d gaps over %s, %s in all, the largest %s",
		s.Spun, s.Count, s.Threshold, s.Total.Round(10*time.Microsecond), s.Largest.Round(10*time.Microsecond))
}
