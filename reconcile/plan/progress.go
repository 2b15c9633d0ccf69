package plan

import (
	"fmt"
	"time"
)

// DefaultProgressDeadline is spec.progressDeadlineSeconds' default, as a
// Deployment's.
const DefaultProgressDeadline = 600 * time.Second

// ReasonProgressDeadlineExceeded: a component moved toward its spec
// without progress for its deadline (Progressing=False; Ready=False unless
// every desired group is Ready; Degraded=True when nothing else says why).
const ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

// Progress is the progress memory of one component (rule 9): where it
// stood when it last made progress, and when. The caller keeps the one
// TrackProgress returns and passes it to the next call, as it does
// Backoff.
type Progress struct {
	// Revision and Desired are the target progress is measured toward;
	// a new target starts a new deadline.
	Revision string
	Desired  int32
	// Outdated, Available and Excess are the marks: live outdated groups,
	// Available groups (Status.Available), live groups beyond Desired.
	Outdated, Available, Excess int32
	// Since is when progress was last made. Zero while Known: long ago
	// (the caller seeds it so when the service already said the deadline
	// was exceeded, so a restart does not forget it).
	Since time.Time
	// Known: the memory holds a measure.
	Known bool
}

// TrackProgress applies rule 9 to a component's Status at revision: it
// returns the new memory, the Status with Stalled and ProgressDeadline
// set, and when to look again for the deadline to pass (0: no timer).
// Progress is a new target (revision or desired groups), one outdated
// group fewer, one more Available group, one excess group fewer, or a
// component at rest.
func TrackProgress(mem Progress, s Status, revision string, deadline time.Duration, now time.Time) (Progress, Status, time.Duration) {
	if deadline <= 0 {
		deadline = DefaultProgressDeadline
	}
	cur := Progress{Revision: revision, Desired: s.Desired, Outdated: s.Outdated, Available: s.Available,
		Excess: max(s.Replicas-s.Desired, 0), Since: mem.Since, Known: true}
	switch {
	case !mem.Known, s.Progressing == "", mem.Revision != revision, mem.Desired != s.Desired:
		cur.Since = now
	case cur.Outdated < mem.Outdated, cur.Available > mem.Available, cur.Excess < mem.Excess:
		cur.Since = now
	default:
		// No progress: keep the best marks seen, so that going back and
		// forth (a group Ready, then failing again) is not progress.
		cur.Outdated, cur.Available, cur.Excess = min(cur.Outdated, mem.Outdated), max(cur.Available, mem.Available), min(cur.Excess, mem.Excess)
	}
	s.ProgressDeadline = deadline
	if s.Progressing == "" {
		return cur, s, 0
	}
	left := cur.Since.Add(deadline).Sub(now)
	if left <= 0 {
		s.Stalled = true
		return cur, s, 0
	}
	return cur, s, left
}

// stalledText is a stalled component's part of the Progressing message.
func stalledText(s Status) string {
	return fmt.Sprintf("%s (no progress for %s, progressDeadlineSeconds)", progressText(s), s.ProgressDeadline)
}
