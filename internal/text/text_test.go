package text

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "MPI_COMM_WORLD", "MPI_COMM_WORLD"},
		{"empty", "", ""},
		{"controls blanked", "a\u2028b\x00c\td\ne", "a b c d e"},
		{"ANSI escape loses its ESC", "\x1b[31mred", " [31mred"},
		{"bidi override blanked", "abc\u202edef", "abc def"},
		{"invalid UTF-8 replaced", "a\xffb", "a\ufffdb"},
		{"long text cut", strings.Repeat("x", 500), strings.Repeat("x", MaxLine) + "..."},
		{"exactly MaxLine kept", strings.Repeat("é", MaxLine), strings.Repeat("é", MaxLine)},
	} {
		if got := Line(tc.in); got != tc.want {
			t.Errorf("%s: Line(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "node1", "node1"},
		{"slurm job id", "12345_7+0", "12345_7+0"},
		{"unicode letters", "nœud-é", "nœud-é"},
		{"punctuation", "job=1;x/y", "job=1;x/y"},
		{"empty", "", `""`},
		{"space", "a b", `"a b"`},
		{"quote", `a"b`, `"a\"b"`},
		{"backslash", `a\b`, `"a\\b"`},
		{"comma, ambiguous in lists", "a,b", `"a,b"`},
		{"newline", "a\nb", `"a\nb"`},
		{"tab", "a\tb", `"a\tb"`},
		{"ANSI escape", "\x1b[2J", `"\x1b[2J"`},
		{"C1 CSI", "a\u009bb", `"a\u009bb"`},
		{"DEL", "a\x7f", `"a\x7f"`},
		{"non-breaking space", "a\u00a0b", `"a\u00a0b"`},
		{"bidi override", "bidi\u202e", `"bidi\u202e"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"invalid UTF-8", "a\xffb", `"a\xffb"`},
		{"truncated rune", "truncated\xe2\x82", `"truncated\xe2\x82"`},
		{"replacement character kept", "é日本\uFFFD", "é日本\uFFFD"},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("%s: Quote(%q) = %s, want %s", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestEcho(t *testing.T) {
	long := strings.Repeat("x", 100)
	accents := strings.Repeat("é", 40) // 80 bytes: the cut falls inside a rune
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain is still quoted", "10x", `"10x"`},
		{"empty", "", `""`},
		{"control", "a\x1bb", `"a\x1bb"`},
		{"at the limit", long[:MaxEcho], strconv.Quote(long[:MaxEcho])},
		{"long cut", long, strconv.Quote(long[:MaxEcho]) + "..."},
		{"cut at a rune boundary", accents, strconv.Quote(strings.Repeat("é", MaxEcho/2)) + "..."},
	} {
		if got := Echo(tc.in); got != tc.want {
			t.Errorf("%s: Echo(%q) = %s, want %s", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "send queued: 3 ranks, rank \"0\"", "send queued: 3 ranks, rank \"0\""},
		{"backslash kept", `C:\x`, `C:\x`},
		{"empty", "", ""},
		{"controls", "a\x1b[31mb\rc\bd\x7f", `a\x1b[31mb\rc\bd\x7f`},
		{"tab and newline", "a\tb\nc", `a\tb\nc`},
		{"C1 and separators", "\u0085\u2028\u202e", `\u0085\u2028\u202e`},
		{"invalid UTF-8", "a\xff\xfeb", `a\xff\xfeb`},
		{"non-ASCII letters kept", "überlauf", "überlauf"},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("%s: Escape(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// unsafeRune returns what makes out unsafe to show, if anything: a
// character that does not print (control characters, ESC and so ANSI
// sequences, newlines, format characters), or invalid UTF-8 (RuneError).
func unsafeRune(out string) (rune, bool) {
	if !utf8.ValidString(out) {
		return utf8.RuneError, true
	}
	for _, r := range out {
		if !strconv.IsPrint(r) {
			return r, true
		}
	}
	return 0, false
}

func FuzzShow(f *testing.F) {
	for _, s := range []string{"", "node1", "a b", "a,b", "\x1b[31m", "a\nb", "\xff", "\u202e", "\u2028",
		`"\`, strings.Repeat("é", 100), "\x00\t\r\u0085\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, show := range map[string]func(string) string{"Line": Line, "Quote": Quote, "Echo": Echo, "Escape": Escape} {
			out := show(s)
			if r, bad := unsafeRune(out); bad {
				t.Errorf("%s(%q) = %q holds %U", name, s, out, r)
			}
		}
		// A safe string is unchanged; anything else Quote changes comes
		// back whole from strconv.Unquote.
		q := Quote(s)
		if plain(s) != (q == s) {
			t.Errorf("Quote(%q) = %q, plain %v", s, q, plain(s))
		}
		if q != s {
			if u, err := strconv.Unquote(q); err != nil || u != s {
				t.Errorf("Quote(%q) = %q does not unquote to it (%q, %v)", s, q, u, err)
			}
		}
		if _, bad := unsafeRune(s); !bad {
			if e := Escape(s); e != s {
				t.Errorf("Escape(%q) = %q changed printable text", s, e)
			}
			if l := Line(s); utf8.RuneCountInString(s) <= MaxLine && l != s {
				t.Errorf("Line(%q) = %q changed printable text", s, l)
			}
		}
	})
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	err := Table(&buf, []string{"JOB", "EVENTS", "STATE"}, [][]string{
		{"100", "1,234", "finished"},
		{Quote("a b"), "5", ""},
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := `┌───────┬────────┬──────────┐
│  JOB  │ EVENTS │  STATE   │
├───────┼────────┼──────────┤
│ 100   │  1,234 │ finished │
│ "a b" │      5 │          │
└───────┴────────┴──────────┘
`
	if buf.String() != want {
		t.Errorf("Table =\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestIsDigits(t *testing.T) {
	for s, want := range map[string]bool{"": false, "0": true, "0123": true, "12a": false, "-1": false, "+1": false, "１": false, " 1": false} {
		if got := IsDigits(s); got != want {
			t.Errorf("IsDigits(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestEscapeJSON(t *testing.T) {
	values := []string{
		"plain", "évian 東京", "over\u202eride", "csi\u009b31m", "zw\u200bsp", "tag\U000e0041", "nl\nesc\x1b[31m", "bad\xffutf8", "<b>&amp;</b>",
	}
	for _, v := range values {
		var buf bytes.Buffer
		if err := EncodeJSON(&buf, map[string]string{"v": v}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, r := range out {
			if r != '\n' && !strconv.IsPrint(r) {
				t.Errorf("EncodeJSON(%q) = %q: holds %U, which does not print", v, out, r)
			}
		}
		var back map[string]string
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatalf("EncodeJSON(%q) = %q: %v", v, out, err)
		}
		if want := strings.ToValidUTF8(v, "\uFFFD"); back["v"] != want {
			t.Errorf("EncodeJSON(%q) decodes to %q, want %q", v, back["v"], want)
		}
	}
	if got := string(EscapeJSON([]byte(`{"a":"b"}`))); got != `{"a":"b"}` {
		t.Errorf("EscapeJSON changed plain text: %s", got)
	}
	if got := string(EscapeJSON([]byte("\"\u202e\""))); got != `"\u202e"` {
		t.Errorf("EscapeJSON(U+202E) = %s", got)
	}
}

func FuzzEscapeJSON(f *testing.F) {
	f.Add("over\u202eride")
	f.Add("\U0001f600\u009b")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(s)
		if err != nil {
			return
		}
		var back string
		if err := json.Unmarshal(EscapeJSON(b), &back); err != nil {
			t.Fatalf("EscapeJSON(%s) is not JSON: %v", b, err)
		}
		var want string
		_ = json.Unmarshal(b, &want)
		if back != want {
			t.Fatalf("EscapeJSON(%s) decodes to %q, want %q", b, back, want)
		}
	})
}

// TestFitTable: a table fitted to a width is no wider, in runes (box
// characters are one column each), and loses no character of its cells;
// width 0 is Table.
func TestFitTable(t *testing.T) {
	header := []string{"JOB", "SIZE", "MPI", "COMMAND"}
	rows := [][]string{{`"1944125441" (mpirun)`, "4", "Open MPI /usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4", "/tmp/hang/hang recv 5 with a long tail of arguments"}}
	var natural bytes.Buffer
	if err := Table(&natural, header, rows, 1); err != nil {
		t.Fatal(err)
	}
	widest := func(s string) int {
		n := 0
		for _, l := range strings.Split(s, "\n") {
			n = max(n, utf8.RuneCountInString(l))
		}
		return n
	}
	letters := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || strings.ContainsRune("│┌┐└┘├┤┬┴┼─", r) {
				return -1
			}
			return r
		}, s)
	}
	for _, width := range []int{0, 100, 70, 50} {
		var b bytes.Buffer
		if err := FitTable(&b, width, header, rows, 1); err != nil {
			t.Fatal(err)
		}
		switch {
		case width == 0 && b.String() != natural.String():
			t.Errorf("width 0 is not Table:\n%s", b.String())
		case width > 0 && widest(b.String()) > width:
			t.Errorf("width %d: a line of %d:\n%s", width, widest(b.String()), b.String())
		}
		// Wrapped cells keep their characters: the same ones, as many.
		got, want := []rune(letters(b.String())), []rune(letters(natural.String()))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("width %d: characters lost or added:\n%s", width, b.String())
		}
	}
	if widest(natural.String()) <= 100 {
		t.Fatalf("the natural table is %d wide: the test needs one wider than 100", widest(natural.String()))
	}
}
