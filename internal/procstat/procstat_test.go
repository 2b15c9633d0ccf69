package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// stat is a /proc/<pid>/stat with comm in place of the command name and
// utime and stime (fields 14 and 15) as given.
func stat(comm, utime, stime string) string {
	return "20560 (" + comm + ") R 20558 20558 19077 0 -1 4194304 99 0 0 0 " + utime + " " + stime +
		" 0 0 20 0 1 0 972889 3133440 393 18446744073709551615 94584107298816 0\n"
}

// utime+stime of a /proc/<pid>/stat, counted after the command name's
// last ')' whatever the name holds; anything else is an error.
func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     time.Duration
		err      bool
	}{
		{"plain", stat("cat", "7", "3"), 100 * time.Millisecond, false},
		{"no ticks yet", stat("cat", "0", "0"), 0, false},
		{"comm with spaces", stat("kube apiserver", "150", "50"), 2 * time.Second, false},
		{"comm with ')' and spaces", stat("a) R 1 2 (b", "1", "2"), 30 * time.Millisecond, false},
		{"comm of parentheses", stat(")) ((", "100", "0"), time.Second, false},
		{"truncated after stime", "20560 (cat) R 20558 20558 19077 0 -1 4194304 99 0 0 0 7 3", 100 * time.Millisecond, false},
		{"truncated before stime", "20560 (cat) R 20558 20558 19077 0 -1 4194304 99 0 0 0 7", 0, true},
		{"truncated in the name", "20560 (ca", 0, true},
		{"empty", "", 0, true},
		{"garbage", "no such thing\n", 0, true},
		{"utime not a number", stat("cat", "x", "3"), 0, true},
		{"negative stime", stat("cat", "7", "-3"), 0, true},
		{"more ticks than a Duration", stat("cat", "18446744073709551615", "1"), 0, true},
		{"sum over a Duration", stat("cat", "922337203685", "1"), 0, true},
	} {
		got, err := parseStat([]byte(c.in))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: got %s, %v; want %s, error %t", c.name, got, err, c.want, c.err)
		}
	}
}

const status = "Name:\tcat\nState:\tR (running)\nVmPeak:\t    3892 kB\nVmSize:\t    3892 kB\n" +
	"VmHWM:\t    1968 kB\nVmRSS:\t    1900 kB\nRssAnon:\t      88 kB\nThreads:\t1\n"

// VmRSS and VmHWM of a /proc/<pid>/status, in bytes; a missing or
// malformed line of the two is an error.
func TestParseStatus(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     Mem
		err      bool
	}{
		{"plain", status, Mem{RSS: 1900 << 10, Peak: 1968 << 10}, false},
		{"no final newline", strings.TrimSuffix(status, "\n"), Mem{RSS: 1900 << 10, Peak: 1968 << 10}, false},
		{"truncated after VmRSS", status[:strings.Index(status, "RssAnon")], Mem{RSS: 1900 << 10, Peak: 1968 << 10}, false},
		{"zero", "VmHWM:\t0 kB\nVmRSS:\t0 kB\n", Mem{}, false},
		{"no VmRSS (a zombie)", strings.Replace(status, "VmRSS:\t    1900 kB\n", "", 1), Mem{}, true},
		{"no VmHWM", strings.Replace(status, "VmHWM:\t    1968 kB\n", "", 1), Mem{}, true},
		{"truncated in VmRSS", status[:strings.Index(status, "1900")+2], Mem{}, true},
		{"VmRSS without a value", strings.Replace(status, "    1900 kB", "", 1), Mem{}, true},
		{"VmRSS not a number", strings.Replace(status, "1900 kB", "lots kB", 1), Mem{}, true},
		{"VmRSS negative", strings.Replace(status, "1900 kB", "-1900 kB", 1), Mem{}, true},
		{"VmRSS in another unit", strings.Replace(status, "1900 kB", "2 MB", 1), Mem{}, true},
		{"VmRSS over int64 bytes", strings.Replace(status, "1900 kB", "9223372036854775807 kB", 1), Mem{}, true},
		{"prefix of the key only", strings.Replace(status, "VmRSS:", "VmRSSX:", 1), Mem{}, true},
		{"empty", "", Mem{}, true},
		{"garbage", "\x00\xff:::\n", Mem{}, true},
	} {
		got, err := parseStatus([]byte(c.in))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v, error %t", c.name, got, err, c.want, c.err)
		}
	}
}

// The first three fields of a /proc/loadavg; fewer, or not load averages,
// is an error. String writes them back as the kernel does.
// CPUSeconds is the ticks over 100 to the bit: what the load tools
// printed when they divided the ticks themselves.
func TestCPUSecondsIsTicksOverAHundred(t *testing.T) {
	for _, ticks := range []uint64{0, 1, 161, 1_000_003, 540_000_000} {
		got := seconds(time.Duration(ticks) * tick)
		if want := float64(ticks) / 100; got != want {
			t.Errorf("%d ticks: %v seconds, want %v", ticks, got, want)
		}
	}
}

func TestParseLoadAvg(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     Load
		err      bool
	}{
		{"plain", "1.91 1.95 3.27 1/100 20561\n", Load{1.91, 1.95, 3.27}, false},
		{"three fields", "0.00 0.01 12.50", Load{0, 0.01, 12.5}, false},
		{"truncated", "1.91 1.95", Load{}, true},
		{"empty", "", Load{}, true},
		{"garbage", "load is high today\n", Load{}, true},
		{"negative", "1.91 -1.95 3.27 1/100 20561\n", Load{}, true},
		{"NaN", "NaN 1.95 3.27 1/100 20561\n", Load{}, true},
		{"Inf", "1.91 1.95 Inf 1/100 20561\n", Load{}, true},
	} {
		got, err := parseLoadAvg([]byte(c.in))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: got %v, %v; want %v, error %t", c.name, got, err, c.want, c.err)
		}
	}
	if s := (Load{1.91, 0.5, 12}).String(); s != "1.91 0.50 12.00" {
		t.Errorf("String: %q", s)
	}
}

// A file that does not parse is an error that starts with its path; one
// that is not there is os.ReadFile's error, naming it too.
func TestReadParseNamesTheFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procstat reads on Linux only")
	}
	path := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readParse(path, parseStat); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("garbage: %v; want an error that starts with %s", err, path)
	}
	const pid = 1 << 30 // over any pid_max
	_, err := Memory(pid)
	if want := fmt.Sprintf("/proc/%d/status", pid); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), want) {
		t.Errorf("no such pid: %v; want a not-exist error naming %s", err, want)
	}
}

// Off Linux every reader is an error wrapping errors.ErrUnsupported that
// names the file.
func TestOffLinuxIsAnError(t *testing.T) {
	defer func(g string) { goos = g }(goos)
	goos = "darwin"
	_, errCPU := CPU(42)
	_, errMem := Memory(42)
	_, errLoad := LoadAvg()
	if got := LoadAvgString(); got != "unknown" {
		t.Errorf("LoadAvgString off Linux = %q, want unknown", got)
	}
	for path, err := range map[string]error{"/proc/42/stat": errCPU, "/proc/42/status": errMem, "/proc/loadavg": errLoad} {
		var pe *fs.PathError
		if !errors.Is(err, errors.ErrUnsupported) || !errors.As(err, &pe) || pe.Path != path {
			t.Errorf("%s: %v; want an *fs.PathError of it wrapping errors.ErrUnsupported", path, err)
		}
	}
}

// The test process itself: some CPU time after some work, resident memory,
// and the machine's load averages.
func TestSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procstat reads on Linux only")
	}
	pid := os.Getpid()
	var cpu time.Duration
	sum := 0
	for deadline := time.Now().Add(10 * time.Second); cpu == 0 && time.Now().Before(deadline); {
		for i := range 10_000_000 { // some work: a tick is 10ms
			sum += i ^ sum
		}
		var err error
		if cpu, err = CPU(pid); err != nil {
			t.Fatal(err)
		}
	}
	if cpu <= 0 {
		t.Errorf("CPU of the test process after 10s of work: %s (sum %d)", cpu, sum)
	}
	if secs, err := CPUSeconds(pid); err != nil || secs < float64(cpu)/float64(time.Second) {
		t.Errorf("CPUSeconds of the test process: %v, %v; want at least CPU's %s", secs, err, cpu)
	}
	m, err := Memory(pid)
	if err != nil || m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("Memory of the test process: %+v, %v; want RSS > 0 and Peak >= RSS", m, err)
	}
	l, err := LoadAvg()
	if err != nil || l[0] < 0 || l[1] < 0 || l[2] < 0 {
		t.Errorf("LoadAvg: %v, %v", l, err)
	}
	if got := LoadAvgString(); len(strings.Fields(got)) != 3 {
		t.Errorf("LoadAvgString = %q, want three load averages", got)
	}
}

// KB writes the resident memory as /proc/<pid>/status writes VmRSS,
// whole kibibytes rounded down.
func TestMemKB(t *testing.T) {
	for rss, want := range map[int64]string{0: "0 kB", 1023: "0 kB", 2015232: "1968 kB", 2015232 + 1023: "1968 kB"} {
		if got := (Mem{RSS: rss, Peak: 1 << 40}).KB(); got != want {
			t.Errorf("Mem{RSS: %d}.KB() = %q, want %q", rss, got, want)
		}
	}
}
