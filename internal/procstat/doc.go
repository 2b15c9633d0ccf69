// Package procstat reads what the load tools measure of a process, and of
// the machine, from Linux's /proc.
//
// The rules:
//
//   - CPU is a process's user plus system CPU time: utime and stime, fields
//     14 and 15 of /proc/<pid>/stat, as a time.Duration. Both count clock
//     ticks of USER_HZ, 100 a second on every Linux architecture Go
//     supports, so it moves in steps of 10ms. CPUSeconds is the same in
//     seconds, exactly the ticks over 100.
//   - Memory is the VmRSS (resident now) and VmHWM (the most resident since
//     the process started) lines of /proc/<pid>/status, in bytes: the file
//     gives kB, which are KiB (1024 bytes). A status without either line
//     (a zombie, a kernel thread) is an error, not a zero.
//   - LoadAvg is the first three fields of /proc/loadavg: the 1, 5 and 15
//     minute averages of the runnable (and uninterruptible) tasks.
//   - Field 2 of /proc/<pid>/stat, the command name (comm), stands in
//     parentheses and may itself hold spaces and parentheses: the fields
//     are counted after the line's last ')', never split from its start.
//   - Errors name the file, and with it the pid: a failed read returns
//     os.ReadFile's own error (an *fs.PathError), a file that does not
//     parse an error that starts with the file's path.
//   - Off Linux every reader returns an *fs.PathError wrapping
//     errors.ErrUnsupported: an error, never a panic.
//
// The parsing is pure functions over a file's bytes (parseStat,
// parseStatus, parseLoadAvg), tested on their own; the exported readers
// only read the file and hand it over.
package procstat
