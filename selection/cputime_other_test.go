//go:build !unix

package selection

import "time"

func processCPU() time.Duration { return 0 }
