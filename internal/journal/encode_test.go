package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// kv is one decoded field of a native protocol payload.
type kv struct{ name, value string }

// decode parses a native protocol payload, accepting both serializations,
// independently of encode.
func decode(b []byte) ([]kv, error) {
	var out []kv
	for len(b) > 0 {
		i := bytes.IndexAny(b, "=\n")
		if i <= 0 {
			return nil, fmt.Errorf("no field name at %q", trim(b))
		}
		name := string(b[:i])
		if b[i] == '=' {
			j := bytes.IndexByte(b[i+1:], '\n')
			if j < 0 {
				return nil, fmt.Errorf("field %s: no terminating newline", name)
			}
			out = append(out, kv{name, string(b[i+1 : i+1+j])})
			b = b[i+1+j+1:]
			continue
		}
		rest := b[i+1:]
		if len(rest) < 8 {
			return nil, fmt.Errorf("field %s: short length", name)
		}
		n := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		if n >= uint64(len(rest)) {
			return nil, fmt.Errorf("field %s: length %d beyond payload", name, n)
		}
		if rest[n] != '\n' {
			return nil, fmt.Errorf("field %s: binary value not followed by newline", name)
		}
		out = append(out, kv{name, string(rest[:n])})
		b = rest[n+1:]
	}
	return out, nil
}

func trim(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

func le64(n int) string {
	return string(binary.LittleEndian.AppendUint64(nil, uint64(n)))
}

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry Entry
		ident string
		want  string
	}{
		{
			name: "simple",
			entry: Entry{Priority: Warning, Message: "rank 3 on n1: MPI_Wait spinning", Fields: []Field{
				{"HOST", "n1"}, {"JOB", "42"}, {"RANK", "3"}, {"PID", "1234"}}},
			ident: "mpiprobe",
			want: "MESSAGE=rank 3 on n1: MPI_Wait spinning\nPRIORITY=4\nSYSLOG_IDENTIFIER=mpiprobe\n" +
				"HOST=n1\nJOB=42\nRANK=3\nPID=1234\n",
		},
		{
			name:  "multi-line message uses the binary form",
			entry: Entry{Priority: Info, Message: "summary\nrank 0: 3"},
			ident: "mpiprobe",
			want:  "MESSAGE\n" + le64(17) + "summary\nrank 0: 3\nPRIORITY=6\nSYSLOG_IDENTIFIER=mpiprobe\n",
		},
		{
			name:  "field with newline uses the binary form",
			entry: Entry{Priority: Err, Message: "m", Fields: []Field{{"JOB", "a\nb"}, {"EVENT", "x"}}},
			ident: "id",
			want:  "MESSAGE=m\nPRIORITY=3\nSYSLOG_IDENTIFIER=id\nJOB\n" + le64(3) + "a\nb\nEVENT=x\n",
		},
		{
			name:  "lone newline and trailing newline",
			entry: Entry{Priority: Debug, Message: "\n", Fields: []Field{{"A", "x\n"}}},
			ident: "id",
			want:  "MESSAGE\n" + le64(1) + "\n\nPRIORITY=7\nSYSLOG_IDENTIFIER=id\nA\n" + le64(2) + "x\n\n",
		},
		{
			name:  "empty values",
			entry: Entry{Priority: Notice, Message: "", Fields: []Field{{"COUNT", ""}}},
			ident: "",
			want:  "MESSAGE=\nPRIORITY=5\nSYSLOG_IDENTIFIER=\nCOUNT=\n",
		},
		{
			name:  "invalid UTF-8, NUL, ESC and CR are sent as they are",
			entry: Entry{Priority: Warning, Message: "\xff\xfe", Fields: []Field{{"PROC", "a\x00b\x1b[31m\r"}}},
			ident: "mpiprobe",
			want:  "MESSAGE=\xff\xfe\nPRIORITY=4\nSYSLOG_IDENTIFIER=mpiprobe\nPROC=a\x00b\x1b[31m\r\n",
		},
		{
			name:  "equals sign in value",
			entry: Entry{Priority: Info, Message: "a=b", Fields: []Field{{"ARGS", "--x=1"}}},
			ident: "m",
			want:  "MESSAGE=a=b\nPRIORITY=6\nSYSLOG_IDENTIFIER=m\nARGS=--x=1\n",
		},
		{
			name:  "repeated names and longest valid name",
			entry: Entry{Priority: Info, Message: "m", Fields: []Field{{"RANK", "1"}, {"RANK", "2"}, {strings.Repeat("A", 64), "v"}, {"A_1", "w"}}},
			ident: "m",
			want:  "MESSAGE=m\nPRIORITY=6\nSYSLOG_IDENTIFIER=m\nRANK=1\nRANK=2\n" + strings.Repeat("A", 64) + "=v\nA_1=w\n",
		},
		{
			name:  "identifier with newline",
			entry: Entry{Priority: Info, Message: "m"},
			ident: "a\nb",
			want:  "MESSAGE=m\nPRIORITY=6\nSYSLOG_IDENTIFIER\n" + le64(3) + "a\nb\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encode(tc.entry, tc.ident)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("encode:\n got %q\nwant %q", got, tc.want)
			}
			if _, err := decode(got); err != nil {
				t.Fatalf("test decoder rejects it: %v", err)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry Entry
		want  string // in the error
	}{
		{"zero priority", Entry{Message: "m"}, "invalid priority 0"},
		{"critical", Entry{Priority: 2, Message: "m"}, "invalid priority 2"},
		{"beyond debug", Entry{Priority: 8, Message: "m"}, "invalid priority 8"},
		{"negative", Entry{Priority: -1, Message: "m"}, "invalid priority -1"},
		{"empty name", Entry{Priority: Info, Fields: []Field{{"", "v"}}}, `invalid field name ""`},
		{"lower case", Entry{Priority: Info, Fields: []Field{{"host", "v"}}}, `invalid field name "host"`},
		{"mixed case", Entry{Priority: Info, Fields: []Field{{"Host", "v"}}}, `"Host"`},
		{"leading underscore", Entry{Priority: Info, Fields: []Field{{"_PID", "v"}}}, `"_PID"`},
		{"leading digit", Entry{Priority: Info, Fields: []Field{{"1RANK", "v"}}}, `"1RANK"`},
		{"dash", Entry{Priority: Info, Fields: []Field{{"MY-FIELD", "v"}}}, `"MY-FIELD"`},
		{"equals", Entry{Priority: Info, Fields: []Field{{"A=B", "v"}}}, `"A=B"`},
		{"newline", Entry{Priority: Info, Fields: []Field{{"A\nB", "v"}}}, `"A\nB"`},
		{"space", Entry{Priority: Info, Fields: []Field{{"A B", "v"}}}, `"A B"`},
		{"non-ASCII", Entry{Priority: Info, Fields: []Field{{"RÉSUMÉ", "v"}}}, `"RÉSUMÉ"`},
		{"65 bytes", Entry{Priority: Info, Fields: []Field{{strings.Repeat("A", 65), "v"}}}, strings.Repeat("A", 65)},
		{"MESSAGE", Entry{Priority: Info, Fields: []Field{{"MESSAGE", "v"}}}, "field MESSAGE is reserved"},
		{"PRIORITY", Entry{Priority: Info, Fields: []Field{{"PRIORITY", "0"}}}, "field PRIORITY is reserved"},
		{"SYSLOG_IDENTIFIER", Entry{Priority: Info, Fields: []Field{{"SYSLOG_IDENTIFIER", "x"}}}, "field SYSLOG_IDENTIFIER is reserved"},
		{"bad after good", Entry{Priority: Info, Fields: []Field{{"HOST", "n1"}, {"bad", "v"}}}, `"bad"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := encode(tc.entry, "mpiprobe")
			if err == nil {
				t.Fatalf("encode succeeded: %q", b)
			}
			if !strings.HasPrefix(err.Error(), "journal: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

// validName is the journal's rule, written independently of checkName.
var validName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

func FuzzEncode(f *testing.F) {
	f.Add("msg", "HOST", "n1", "mpiprobe", 4)
	f.Add("a\nb", "JOB", "x\ny\n", "id", 6)
	f.Add("", "A", "", "", 3)
	f.Add("\xff\x00\x1b", "_PID", "\n", "a\nb", 0)
	f.Add("m", "MESSAGE", "v", "m", 7)
	f.Fuzz(func(t *testing.T, msg, name, value, ident string, prio int) {
		e := Entry{Priority: Priority(prio), Message: msg, Fields: []Field{{"HOST", value}, {name, value}, {"JOB", msg}}}
		b, err := encode(e, ident)
		reserved := name == "MESSAGE" || name == "PRIORITY" || name == "SYSLOG_IDENTIFIER"
		valid := prio >= 3 && prio <= 7 && validName.MatchString(name) && !reserved
		if !valid {
			if err == nil {
				t.Fatalf("encode accepted priority %d, name %q", prio, name)
			}
			return
		}
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		got, err := decode(b)
		if err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
		want := []kv{{"MESSAGE", msg}, {"PRIORITY", fmt.Sprint(prio)}, {"SYSLOG_IDENTIFIER", ident},
			{"HOST", value}, {name, value}, {"JOB", msg}}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Fatalf("round trip:\n got %q\nwant %q", got, want)
		}
	})
}
