package main

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dist summarises a set of durations, in milliseconds.
type dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// msDist summarises values in milliseconds.
func msDist(ms []float64) dist {
	if len(ms) == 0 {
		return dist{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return dist{N: len(s), Min: round3(s[0]), P50: round3(pct(s, 0.50)), P90: round3(pct(s, 0.90)),
		P99: round3(pct(s, 0.99)), P999: round3(pct(s, 0.999)), Max: round3(s[len(s)-1]), Mean: round3(sum / float64(len(s)))}
}

// pct is the nearest-rank percentile of sorted values.
func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// procStat is what /proc says about one process.
type procStat struct {
	CPU    time.Duration // user + system
	RSSKiB int64
	HWMKiB int64
}

// clockTick is USER_HZ, 100 on every Linux architecture Go runs on.
const clockTick = 100

func readProc(pid int) (procStat, bool) {
	var ps procStat
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ps, false
	}
	// The command name may hold spaces: fields start after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ps, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return ps, false
	}
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	ps.CPU = time.Duration(ut+st) * time.Second / clockTick
	if st, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status")); err == nil {
		sc := bufio.NewScanner(st)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "VmRSS:"):
				ps.RSSKiB = kib(line)
			case strings.HasPrefix(line, "VmHWM:"):
				ps.HWMKiB = kib(line)
			}
		}
		st.Close()
	}
	return ps, true
}

func kib(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n
}

// ppid returns the parent of pid.
func ppid(pid int) int {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// treeCPU is the CPU time of a process and its live children (the
// postmaster and its backends). Backends that exited during a measurement
// are not counted: the bench keeps its connections open across one.
func treeCPU(root int) time.Duration {
	if root <= 0 {
		return 0
	}
	var total time.Duration
	if ps, ok := readProc(root); ok {
		total += ps.CPU
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		if ppid(pid) == root {
			if ps, ok := readProc(pid); ok {
				total += ps.CPU
			}
		}
	}
	return total
}

// cpuMeter measures CPU used by the bench itself, a runner process and
// Postgres over an interval, in cores (CPU seconds per wall second).
type cpuMeter struct {
	runnerPID, postmaster int
	start                 time.Time
	self, runner, pg      time.Duration
}

func startCPU(runnerPID, postmaster int) *cpuMeter {
	m := &cpuMeter{runnerPID: runnerPID, postmaster: postmaster, start: time.Now()}
	m.self, m.runner, m.pg = m.read()
	return m
}

func (m *cpuMeter) read() (self, runner, pg time.Duration) {
	if ps, ok := readProc(os.Getpid()); ok {
		self = ps.CPU
	}
	if m.runnerPID > 0 {
		if ps, ok := readProc(m.runnerPID); ok {
			runner = ps.CPU
		}
	}
	pg = treeCPU(m.postmaster)
	return
}

// cpuUse is the CPU used over an interval, in cores.
type cpuUse struct {
	Bench    float64 `json:"bench_cores"`
	Runner   float64 `json:"runner_cores,omitempty"`
	Postgres float64 `json:"postgres_cores"`
	Machine  int     `json:"machine_cores"`
}

// raw returns the CPU time used since start: bench, runner, Postgres.
func (m *cpuMeter) raw() (self, runner, pg time.Duration) {
	s, r, p := m.read()
	return s - m.self, r - m.runner, p - m.pg
}

func (m *cpuMeter) stop() cpuUse {
	self, runner, pg := m.read()
	wall := time.Since(m.start).Seconds()
	c := func(d time.Duration) float64 { return round3(d.Seconds() / wall) }
	return cpuUse{Bench: c(self - m.self), Runner: c(runner - m.runner), Postgres: c(pg - m.pg), Machine: runtime.NumCPU()}
}

// histogram buckets values (ms) into log-spaced bins for the charts.
type bin struct {
	Lo, Hi float64
	N      int
}

func logHistogram(ms []float64, lo, hi float64, perDecade int) []bin {
	if lo <= 0 {
		lo = 0.1
	}
	n := int(math.Ceil(math.Log10(hi/lo) * float64(perDecade)))
	bins := make([]bin, n)
	for i := range bins {
		bins[i].Lo = lo * math.Pow(10, float64(i)/float64(perDecade))
		bins[i].Hi = lo * math.Pow(10, float64(i+1)/float64(perDecade))
	}
	for _, v := range ms {
		i := 0
		if v > lo {
			i = int(math.Log10(v/lo) * float64(perDecade))
		}
		bins[max(0, min(i, n-1))].N++
	}
	return bins
}
