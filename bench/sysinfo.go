package main

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

type machineInfo struct {
	NProc      int     `json:"nproc"`
	MemGiB     float64 `json:"memory_gib"`
	CPUModel   string  `json:"cpu_model"`
	Kernel     string  `json:"kernel"`
	GoVersion  string  `json:"go"`
	LoadBefore string  `json:"load_before"`
	LoadAfter  string  `json:"load_after"`
}

func machine() machineInfo {
	m := machineInfo{NProc: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAvg()}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "MemTotal:") {
				m.MemGiB = round1(float64(kib(sc.Text())) / (1 << 20))
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// loadAvg is the 1, 5 and 15 minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

func loadOne(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

type pgSetting struct {
	Name    string `json:"name"`
	Setting string `json:"setting"`
	Unit    string `json:"unit,omitempty"`
	Source  string `json:"source"`
}

type pgInfo struct {
	Version        string      `json:"version"`
	OwnCluster     bool        `json:"own_cluster"`
	Settings       []pgSetting `json:"non_default_settings"`
	MigrateSeconds float64     `json:"migrate_seconds"`
	StatStatements bool        `json:"pg_stat_statements"`
}

func postgresInfo(ctx context.Context, env *pgEnv) pgInfo {
	info := pgInfo{OwnCluster: env.cluster != nil, StatStatements: env.pgss}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, env.adminURL)
	if err != nil {
		return info
	}
	defer conn.Close(context.Background())
	_ = conn.QueryRow(ctx, `SELECT version()`).Scan(&info.Version)
	rows, err := conn.Query(ctx, `
		SELECT name, current_setting(name), '', source FROM pg_settings
		WHERE source NOT IN ('default', 'override', 'client', 'session', 'environment variable')
		  AND name NOT IN ('application_name', 'config_file', 'data_directory', 'hba_file', 'ident_file',
		                   'lc_messages', 'lc_monetary', 'lc_numeric', 'lc_time', 'log_timezone', 'TimeZone', 'DateStyle',
		                   'default_text_search_config', 'unix_socket_directories', 'listen_addresses', 'port')
		ORDER BY name`)
	if err != nil {
		return info
	}
	defer rows.Close()
	for rows.Next() {
		var s pgSetting
		if rows.Scan(&s.Name, &s.Setting, &s.Unit, &s.Source) == nil {
			info.Settings = append(info.Settings, s)
		}
	}
	return info
}
