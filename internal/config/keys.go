package config

import (
	"fmt"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mpiprobe/mpiprobe/internal/procfs"
	"github.com/mpiprobe/mpiprobe/internal/query"
	"github.com/mpiprobe/mpiprobe/internal/text"
	"github.com/mpiprobe/mpiprobe/thresholds"
)

// thresholdPrefix starts the key of a per-event setting, threshold.EVENT.
const thresholdPrefix = "threshold."

// thresholdHelp says how to write a per-event setting.
const thresholdHelp = "use threshold.EVENT = C/T, e.g. threshold.ob1.send_pending.new = 500/10s"

// key is one fixed key of the file.
type key struct {
	name    string
	example string // a valid value, for "missing value" messages
	set     func(c *Config, value string, opt Options) error
}

// keys are the fixed keys, in the order of the documentation.
var keys = []key{
	{"C", "1000", func(c *Config, v string, _ Options) error {
		n, err := thresholds.ParseC(v)
		if err != nil {
			return err
		}
		c.Thresholds.C = &n
		return nil
	}},
	{"T", "10s", func(c *Config, v string, _ Options) error {
		t, err := thresholds.ParseT(v)
		if err != nil {
			return err
		}
		c.Thresholds.T = &t
		return nil
	}},
	{"events", "default,retries", setEvents},
	{"library_paths", "/opt/openmpi/lib", func(c *Config, v string, _ Options) error {
		paths, err := parsePaths(v)
		c.LibraryPaths = paths
		return err
	}},
	{"debug_dirs", "/opt/openmpi/debug", func(c *Config, v string, _ Options) error {
		dirs, err := parsePaths(v)
		c.DebugDirs = dirs
		return err
	}},
	{"metrics_addr", "127.0.0.1:9767", func(c *Config, v string, _ Options) error {
		addr, err := parseAddr(v)
		c.MetricsAddr = addr
		return err
	}},
	{"state_dir", "/var/lib/mpiprobe", func(c *Config, v string, _ Options) error {
		dir, err := parseAbs(v, "/var/lib/mpiprobe")
		c.StateDir = dir
		return err
	}},
	{"shared_dir", "/shared/mpiprobe", func(c *Config, v string, _ Options) error {
		dir, err := parseAbs(v, "/shared/mpiprobe")
		c.SharedDir = dir
		return err
	}},
	{"retention.jobs", "1000", func(c *Config, v string, _ Options) error {
		n, err := parseJobs(v)
		c.RetentionJobs = n
		return err
	}},
	{"retention.age", "30d", func(c *Config, v string, _ Options) error {
		d, err := parseDuration(v, "30d, 720h")
		if err == nil && d < MinRetentionAge {
			err = fmt.Errorf("%s is shorter than 1m (use e.g. 30d, 720h)", text.Echo(v))
		}
		c.RetentionAge = d
		return err
	}},
	{"interval", "1s", func(c *Config, v string, _ Options) error {
		const help = "use 100ms to 1m, e.g. 1s"
		d, err := parseDuration(v, "1s, 500ms")
		switch {
		case err != nil:
		case d < MinInterval:
			err = fmt.Errorf("%s is shorter than 100ms (%s)", text.Echo(v), help)
		case d > MaxInterval:
			err = fmt.Errorf("%s is longer than 1m (%s)", text.Echo(v), help)
		}
		c.Interval = d
		return err
	}},
	{"pin_dir", "/sys/fs/bpf/mpiprobe/agent", func(c *Config, v string, _ Options) error {
		dir, err := parseAbs(v, "/sys/fs/bpf/mpiprobe/agent")
		if err == nil && !strings.HasPrefix(dir, BPFRoot+"/") {
			err = fmt.Errorf("%s is not below %s (use e.g. /sys/fs/bpf/mpiprobe/agent)", text.Echo(v), BPFRoot)
		}
		c.PinDir = dir
		return err
	}},
	{"metrics_ttl", "10m", func(c *Config, v string, _ Options) error {
		d, err := parseDuration(v, "10m, 1h")
		if err == nil && d < 0 {
			err = fmt.Errorf("%s is negative (use 0 or more, e.g. 10m)", text.Echo(v))
		}
		c.MetricsTTL = d
		return err
	}},
	{"scope", "netns", func(c *Config, v string, _ Options) error {
		if v != procfs.ScopeHost && v != procfs.ScopeNetns {
			return fmt.Errorf("%s is not a scope (use host: every process of the node, or netns: those of mpiprobe's network namespace)", text.Echo(v))
		}
		c.Scope = v
		return nil
	}},
	{"query_socket", query.DefaultPath, func(c *Config, v string, _ Options) error {
		if v == query.Off {
			c.QuerySocket = ""
			return nil
		}
		p, err := parseAbs(v, query.DefaultPath+" or off")
		c.QuerySocket = p
		return err
	}},
}

// lookup returns the fixed key named name, or nil.
func lookup(name string) *key {
	for i := range keys {
		if keys[i].name == name {
			return &keys[i]
		}
	}
	return nil
}

// suggest returns the fix for an unknown key: the key it probably meant,
// or the list of keys.
func suggest(k string, opt Options) string {
	for _, known := range keys {
		if strings.EqualFold(k, known.name) {
			return "keys are case-sensitive: use " + strconv.Quote(known.name)
		}
	}
	if len(k) > len(thresholdPrefix) && strings.EqualFold(k[:len(thresholdPrefix)], thresholdPrefix) {
		return "keys are case-sensitive: use " + text.Echo(thresholdPrefix+k[len(thresholdPrefix):])
	}
	norm := normalize(k)
	if rest, ok := strings.CutPrefix(norm, normalize(thresholdPrefix)); ok && rest != "" {
		return "did you mean " + text.Echo(thresholdPrefix+k[len(thresholdPrefix):]) + "?"
	}
	if opt.KnownEvent != nil && thresholds.CheckEvent(k, "") == nil && opt.KnownEvent(k) {
		return "did you mean " + text.Echo(thresholdPrefix+k) + "?"
	}
	best, bestDist := "", 3 // suggest only keys at most 2 edits away
	if len(norm) <= 64 {
		for _, known := range keys {
			if len(known.name) < 4 {
				continue // C and T are too short to guess
			}
			if d := distance(norm, normalize(known.name)); d < bestDist {
				best, bestDist = known.name, d
			}
		}
	}
	if best != "" {
		return "did you mean " + strconv.Quote(best) + "?"
	}
	return "use " + keyList()
}

// keyList names every key, in the order of the documentation: "C, T,
// threshold.EVENT, events, ... or metrics_ttl". It is built from keys, so
// that no key can be missing from it.
func keyList() string {
	names := []string{keys[0].name, keys[1].name, thresholdPrefix + "EVENT"}
	for _, k := range keys[2:] {
		names = append(names, k.name)
	}
	return orList(names)
}

// normalize lowercases the ASCII letters of s and turns the separators
// '-', '.', ' ' and tab into '_', so that metrics-addr and retention_jobs
// match their keys. It keeps byte offsets.
func normalize(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c == '-', c == '.', c == ' ', c == '\t':
			b[i] = '_'
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// setEvents parses the events key: comma-separated levels, or "all".
func setEvents(c *Config, v string, opt Options) error {
	levels := opt.Levels
	help := "use e.g. default,retries"
	if levels != nil {
		help = "use " + orList(append(slices.Clone(levels), "all"))
	}
	var out []string
	for _, l := range strings.Split(v, ",") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
			return fmt.Errorf("empty level in %s (separate levels with one comma, e.g. default,retries)", text.Echo(v))
		case slices.Contains(out, l):
			return fmt.Errorf("level %s is listed twice (list each level once)", text.Echo(l))
		case l == "all":
		case levels == nil && !validLevel(l):
			return fmt.Errorf("level %s is invalid (use lowercase letters, digits, '_' and '-')", text.Echo(l))
		case levels != nil && !slices.Contains(levels, l):
			return fmt.Errorf("unknown level %s (%s)", text.Echo(l), help)
		}
		out = append(out, l)
	}
	if len(out) > 1 && slices.Contains(out, "all") {
		return fmt.Errorf("%s combines all with other levels (use all alone, or list the levels)", text.Echo(v))
	}
	c.Events = out
	return nil
}

// validLevel reports whether l is a plausible level name: [a-z0-9_-]+.
func validLevel(l string) bool {
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return l != ""
}

// orList renders items as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// parsePaths parses library_paths: colon-separated absolute paths.
func parsePaths(v string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(v, ":") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("empty path in %s (separate paths with one colon, e.g. /opt/openmpi/lib:/usr/lib64/mpich/lib)", text.Echo(v))
		}
		clean, err := parseAbs(p, "/opt/openmpi/lib")
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, clean) {
			return nil, fmt.Errorf("path %s is listed twice (list each path once)", text.Echo(p))
		}
		out = append(out, clean)
	}
	return out, nil
}

// parseAbs parses an absolute path and cleans it; example is a valid one.
func parseAbs(v, example string) (string, error) {
	if strings.ContainsFunc(v, unicode.IsControl) {
		return "", fmt.Errorf("%s contains a control character (remove it)", text.Echo(v))
	}
	if !path.IsAbs(v) {
		return "", fmt.Errorf("%s is not an absolute path (use e.g. %s)", text.Echo(v), example)
	}
	return path.Clean(v), nil
}

// parseAddr parses metrics_addr: host:port, or off ("").
func parseAddr(v string) (string, error) {
	const help = "use e.g. 127.0.0.1:9767, [::1]:9767, :9767 or off"
	if v == "off" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("%s is not host:port (%s)", text.Echo(v), help)
	}
	n, err := strconv.Atoi(port)
	if err != nil || !text.IsDigits(port) || n > 65535 {
		return "", fmt.Errorf("port %s is not a number from 0 to 65535 (use e.g. 127.0.0.1:9767)", text.Echo(port))
	}
	if host != "" && !validHost(host) {
		return "", fmt.Errorf("host %s is not an IP address or host name (%s)", text.Echo(host), help)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// validHost reports whether h is an IP address or a host name: dot-separated
// labels of letters, digits, '-' and '_'.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			switch c := label[i]; {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}

// parseJobs parses retention.jobs: a whole number, 1 or more.
func parseJobs(v string) (int, error) {
	s := strings.TrimPrefix(v, "-")
	if !text.IsDigits(s) {
		return 0, fmt.Errorf("%s is not a whole number (use e.g. 1000)", text.Echo(v))
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil && s != v:
		return 0, fmt.Errorf("%s is less than 1 (keep at least 1 job, e.g. 1000)", text.Echo(v))
	case err != nil:
		return 0, fmt.Errorf("%s is too large (use e.g. 1000)", text.Echo(v))
	case n < 1:
		return 0, fmt.Errorf("%s is less than 1 (keep at least 1 job, e.g. 1000)", text.Echo(v))
	}
	return n, nil
}

// parseDuration parses a Go duration such as 1m30s or 500ms, optionally
// preceded by whole days: 30d, 1d12h. A bare number other than 0 is an
// error. examples are valid durations for the message.
func parseDuration(v, examples string) (time.Duration, error) {
	s, neg := v, false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s, neg = s[1:], s[0] == '-'
	}
	if s != "" && strings.Trim(s, "0123456789.") == "" && strings.Trim(s, "0.") != "" {
		return 0, fmt.Errorf("%s has no unit (use e.g. %s)", text.Echo(v), examples)
	}
	tooLarge := fmt.Errorf("%s is too large (use e.g. %s)", text.Echo(v), examples)
	var d time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 && text.IsDigits(s[:i]) {
		days, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || days > int64(1<<63-1)/int64(24*time.Hour) {
			return 0, tooLarge
		}
		d = time.Duration(days) * 24 * time.Hour
		s = s[i+1:]
	} else if s == "" {
		return 0, fmt.Errorf("%s is not a duration (use e.g. %s)", text.Echo(v), examples)
	}
	if s != "" {
		rest, err := time.ParseDuration(s)
		if err != nil || !text.IsDigits(s[:1]) && s[0] != '.' {
			return 0, fmt.Errorf("%s is not a duration (use e.g. %s)", text.Echo(v), examples)
		}
		if d > 1<<63-1-rest {
			return 0, tooLarge
		}
		d += rest
	}
	if neg {
		d = -d
	}
	return d, nil
}
