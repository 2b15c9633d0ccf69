package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// tick is one clock tick of USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat: 100 a second on every Linux architecture Go supports.
const tick = time.Second / 100

// goos is runtime.GOOS; the test of the off-Linux error sets it.
var goos = runtime.GOOS

// Mem is a process's resident memory, in bytes.
type Mem struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the most resident since the process started
}

// KB is the resident memory now as /proc/<pid>/status writes VmRSS:
// "1968 kB".
func (m Mem) KB() string { return fmt.Sprintf("%d kB", m.RSS/1024) }

// Load is the 1, 5 and 15 minute load averages.
type Load [3]float64

// String is the three as /proc/loadavg writes them: "0.52 0.58 0.59".
func (l Load) String() string { return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2]) }

// CPU is the user plus system CPU time pid has used (/proc/<pid>/stat).
func CPU(pid int) (time.Duration, error) {
	return readParse(fmt.Sprintf("/proc/%d/stat", pid), parseStat)
}

// CPUSeconds is CPU in seconds, exactly the ticks over 100, where
// time.Duration.Seconds can be one unit in the last place off (1.61 read
// as 1.6099999999999999).
func CPUSeconds(pid int) (float64, error) {
	cpu, err := CPU(pid)
	return seconds(cpu), err
}

// seconds is d in seconds, divided as one float64 by another.
func seconds(d time.Duration) float64 { return float64(d) / float64(time.Second) }

// Memory is pid's resident memory now and at its peak (/proc/<pid>/status).
func Memory(pid int) (Mem, error) {
	return readParse(fmt.Sprintf("/proc/%d/status", pid), parseStatus)
}

// LoadAvgString is LoadAvg as /proc/loadavg writes it, or "unknown" when
// it cannot be read: what a load tool prints beside its figures.
func LoadAvgString() string {
	l, err := LoadAvg()
	if err != nil {
		return "unknown"
	}
	return l.String()
}

// LoadAvg is the machine's load averages (/proc/loadavg).
func LoadAvg() (Load, error) {
	return readParse("/proc/loadavg", parseLoadAvg)
}

// readParse reads the file at path and parses it; a parse error starts
// with the path.
func readParse[T any](path string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	if goos != "linux" {
		return zero, &fs.PathError{Op: "read", Path: path, Err: errors.ErrUnsupported}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return zero, err
	}
	v, err := parse(b)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// parseStat is utime+stime of a /proc/<pid>/stat.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no ')' closing the command name")
	}
	// After the command name, f[0] is field 3 (state): utime and stime,
	// fields 14 and 15, are f[11] and f[12].
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want 13 or more", len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("utime %q stime %q: not counts of ticks", f[11], f[12])
	}
	if most := uint64(math.MaxInt64 / tick); stime > most || utime > most-stime {
		return 0, fmt.Errorf("utime %d stime %d: more ticks than a time.Duration holds", utime, stime)
	}
	return time.Duration(utime+stime) * tick, nil
}

// parseStatus is the VmRSS and VmHWM of a /proc/<pid>/status.
func parseStatus(b []byte) (Mem, error) {
	var m Mem
	var rss, hwm bool
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		var err error
		switch k {
		case "VmRSS":
			m.RSS, err = kiB(v)
			rss = true
		case "VmHWM":
			m.Peak, err = kiB(v)
			hwm = true
		default:
			continue
		}
		if err != nil {
			return Mem{}, fmt.Errorf("%s: %w", k, err)
		}
	}
	switch {
	case !rss:
		return Mem{}, errors.New("no VmRSS line")
	case !hwm:
		return Mem{}, errors.New("no VmHWM line")
	}
	return m, nil
}

// kiB is a status line's value, "   1968 kB", in bytes.
func kiB(v string) (int64, error) {
	f := strings.Fields(v)
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("%q is not a number of kB", strings.TrimSpace(v))
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/1024 {
		return 0, fmt.Errorf("%q is not a number of kB", strings.TrimSpace(v))
	}
	return n * 1024, nil
}

// parseLoadAvg is the first three fields of a /proc/loadavg.
func parseLoadAvg(b []byte) (Load, error) {
	var l Load
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return l, fmt.Errorf("%d fields, want 3 or more", len(f))
	}
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Load{}, fmt.Errorf("field %d, %q, is not a load average", i+1, f[i])
		}
		l[i] = v
	}
	return l, nil
}
