package metrics_test

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mpiprobe/mpiprobe/internal/metrics"
)

// FuzzEncodeLabels encodes arbitrary label values and help text and reads
// the page back with a small parser: the values must come back as given
// (invalid UTF-8 replaced), one line per sample.
func FuzzEncodeLabels(f *testing.F) {
	for _, v := range nastyValues {
		f.Add(v, "x", "Help.", uint8(0))
	}
	f.Add("a", "a", "Help.", uint8(0))
	f.Add("\xff", "\xfe", "Help.", uint8(0))
	f.Add("b", "a", "back\\slash\nnew line \xff", uint8(2))
	f.Add("", "", "", uint8(1))
	f.Add("\"", "\\", "\\n", uint8(4))
	f.Fuzz(func(t *testing.T, v1, v2, help string, capByte uint8) {
		maxSeries := int(capByte % 5)
		fam := metrics.Family{Name: "fuzz_total", Help: help, Kind: metrics.Counter, Samples: []metrics.Sample{
			{Labels: []metrics.Label{{Name: "a", Value: v1}}, Value: 1},
			{Labels: []metrics.Label{{Name: "a", Value: v2}}, Value: 2},
			{Labels: []metrics.Label{{Name: "a", Value: v1}, {Name: "b", Value: v2}}, Value: 3},
		}}
		var buf bytes.Buffer
		err := metrics.Encode(&buf, []metrics.Family{fam}, maxSeries)
		clean := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		if strings.TrimSpace(help) == "" || clean(v1) == clean(v2) {
			if err == nil {
				t.Fatalf("no error for help %q, values %q and %q", help, v1, v2)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		if !utf8.ValidString(page) {
			t.Fatalf("page is not valid UTF-8: %q", page)
		}
		kept := 3
		if maxSeries > 0 {
			kept = min(3, maxSeries)
		}
		lines := strings.Split(page, "\n")
		if lines[len(lines)-1] != "" {
			t.Fatalf("page does not end in a newline: %q", page)
		}
		lines = lines[:len(lines)-1]
		wantLines := 2 + kept
		if maxSeries > 0 {
			wantLines += 3
		}
		if len(lines) != wantLines {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), wantLines, page)
		}

		if got, want := lines[0], "# HELP fuzz_total "; !strings.HasPrefix(got, want) {
			t.Fatalf("line 1 %q", got)
		} else if h, err := unescapeHelp(got[len(want):]); err != nil || h != clean(help) {
			t.Fatalf("help %q read back as %q (%v), want %q", help, h, err, clean(help))
		}
		if lines[1] != "# TYPE fuzz_total counter" {
			t.Fatalf("line 2 %q", lines[1])
		}
		want := []string{
			fmt.Sprintf("a=%q 1", clean(v1)),
			fmt.Sprintf("a=%q 2", clean(v2)),
			fmt.Sprintf("a=%q b=%q 3", clean(v1), clean(v2)),
		}
		var got []string
		var prev []metrics.Label
		for _, line := range lines[2 : 2+kept] {
			name, labels, value, err := parseSample(line)
			if err != nil || name != "fuzz_total" {
				t.Fatalf("sample %q: name %q, %v", line, name, err)
			}
			if prev != nil && !labelsBefore(prev, labels) {
				t.Errorf("samples not sorted: %v before %v", prev, labels)
			}
			prev = labels
			var b strings.Builder
			for _, l := range labels {
				fmt.Fprintf(&b, "%s=%q ", l.Name, l.Value)
			}
			got = append(got, b.String()+value)
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("read back %s, want one of %q", g, want)
			}
		}
		if maxSeries > 0 {
			wantDropped := []string{
				"# HELP mpiprobe_metrics_series_dropped ",
				"# TYPE mpiprobe_metrics_series_dropped gauge",
				"mpiprobe_metrics_series_dropped " + strconv.Itoa(3-kept),
			}
			for i, w := range wantDropped {
				if !strings.HasPrefix(lines[2+kept+i], w) {
					t.Errorf("line %d %q, want %q", 3+kept+i, lines[2+kept+i], w)
				}
			}
		}
	})
}

// labelsBefore reports whether a sorts before b: by values, in order.
func labelsBefore(a, b []metrics.Label) bool {
	for i := range min(len(a), len(b)) {
		if a[i].Value != b[i].Value {
			return a[i].Value < b[i].Value
		}
	}
	return len(a) < len(b)
}

func unescapeHelp(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i++; i == len(s) {
			return "", fmt.Errorf("help ends in a lone backslash")
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		default:
			return "", fmt.Errorf("unknown escape \\%c in help", s[i])
		}
	}
	return b.String(), nil
}

// parseSample reads name{l="v",...} value, the subset of the text format
// Encode writes.
func parseSample(line string) (name string, labels []metrics.Label, value string, err error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, "", fmt.Errorf("no name")
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for rest != "" && rest[0] != '}' {
			eq := strings.Index(rest, `="`)
			if eq <= 0 {
				return "", nil, "", fmt.Errorf("no label name at %q", rest)
			}
			l := metrics.Label{Name: rest[:eq]}
			rest = rest[eq+2:]
			var b strings.Builder
			for {
				if rest == "" {
					return "", nil, "", fmt.Errorf("unterminated label value")
				}
				c := rest[0]
				rest = rest[1:]
				if c == '"' {
					break
				}
				if c == '\\' {
					if rest == "" {
						return "", nil, "", fmt.Errorf("lone backslash")
					}
					switch rest[0] {
					case '\\', '"':
						b.WriteByte(rest[0])
					case 'n':
						b.WriteByte('\n')
					default:
						return "", nil, "", fmt.Errorf("unknown escape \\%c", rest[0])
					}
					rest = rest[1:]
					continue
				}
				b.WriteByte(c)
			}
			l.Value = b.String()
			labels = append(labels, l)
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return "", nil, "", fmt.Errorf("junk after label value: %q", rest)
			}
		}
		if rest == "" {
			return "", nil, "", fmt.Errorf("unterminated label set")
		}
		rest = rest[1:]
	}
	value, ok := strings.CutPrefix(rest, " ")
	if !ok || value == "" || strings.ContainsAny(value, " \n") {
		return "", nil, "", fmt.Errorf("bad value %q", rest)
	}
	return name, labels, value, nil
}
