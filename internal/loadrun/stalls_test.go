package loadrun

import (
	"testing"
	"time"
)

// A clock that moves 10 µs a read, except where a gap is planted, is
// reported with exactly the planted gaps over the threshold, and the spin
// ends once the duration has passed.
func TestMeasureStallsCountsGapsOverTheThreshold(t *testing.T) {
	ms := time.Millisecond
	planted := map[int]time.Duration{5: 3 * ms, 9: ms / 2, 12: 7 * ms} // read number → gap before it
	var clock time.Time
	reads := 0
	now := func() time.Time {
		reads++
		step := 10 * time.Microsecond
		if g, ok := planted[reads]; ok {
			step = g
		}
		clock = clock.Add(step)
		return clock
	}
	got := MeasureStalls(20*ms, ms, now)
	want := Stalls{Spun: 20 * ms, Threshold: ms, Count: 2, Total: 10 * ms, Largest: 7 * ms}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if spun := clock.Sub(time.Time{}); spun < 20*ms || spun > 20*ms+10*time.Microsecond {
		t.Errorf("the clock moved %s; the spin should end at its first read 20ms after the start", spun)
	}
	if s := got.String(); s != "20ms of one spinning thread: 2 gaps over 1ms, 10ms in all, the largest 7ms" {
		t.Errorf("String: %q", s)
	}
}
