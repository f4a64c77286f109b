package procfs

import (
	"strings"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Stat
	}{
		{
			name: "cat",
			line: "6840 (cat) R 6836 6836 3061 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 23053 3133440 412 18446744073709551615 94389293453312 94389293473193 140724478258832 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94389293489200 94389293490816 94390022995968 140724478261757 140724478261777 140724478261777 140724478263275 0\n",
			want: Stat{PID: 6840, PPID: 6836, Comm: "cat", State: 'R', Flags: 4194304, StartTime: 23053},
		},
		{
			name: "hydra proxy",
			line: "51234 (hydra_pmi_proxy) S 51230 51230 4100 34816 51230 4194560 880 2311 0 0 3 1 12 4 20 0 1 0 9182733 12087296 1030 18446744073709551615 1 1 0 0 0 0 0 4096 16386 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			want: Stat{PID: 51234, PPID: 51230, Comm: "hydra_pmi_proxy", State: 'S', Flags: 4194560, StartTime: 9182733},
		},
		{
			name: "kernel thread",
			line: "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 2 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			want: Stat{PID: 2, PPID: 0, Comm: "kthreadd", State: 'S', Flags: 2129984, StartTime: 2},
		},
		{
			name: "comm with spaces and parentheses",
			line: "4242 (a) b (c)) Z 1 4242 4242 0 -1 4194316 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			want: Stat{PID: 4242, PPID: 1, Comm: "a) b (c)", State: 'Z', Flags: 4194316, StartTime: 777},
		},
		{
			name: "stopped by SIGSTOP",
			line: "7998 (hang) T 7967 7998 21967 0 -1 4194304 1582 0 0 0 13 17 0 0 20 0 3 0 1274492 233521152 3647 18446744073709551615 94559477080064 94559477081413 140737191695168 0 0 0 0 4 1248 0 0 0 17 1 0 0 0 0 0 94559477091776 94559477092512 94559649673216 140737191699159 140737191699173 140737191699173 140737191702513 19\n",
			want: Stat{PID: 7998, PPID: 7967, Comm: "hang", State: 'T', Flags: 4194304, StartTime: 1274492, ExitCode: 19},
		},
		{
			name: "empty comm, exactly 22 fields",
			line: "7 () S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
			want: Stat{PID: 7, PPID: 1, Comm: "", State: 'S', StartTime: 99},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.line))
			if err != nil {
				t.Fatalf("ParseStat: %v", err)
			}
			if got != tt.want {
				t.Fatalf("ParseStat:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestStopSignal: a stopped process names the signal that stopped it,
// one that runs or one whose signal is hidden none.
func TestStopSignal(t *testing.T) {
	for _, tc := range []struct {
		st   Stat
		want syscall.Signal
	}{
		{Stat{State: 'T', ExitCode: 19}, syscall.SIGSTOP},
		{Stat{State: 'T', ExitCode: 20}, syscall.SIGTSTP},
		{Stat{State: 't', ExitCode: 5}, syscall.SIGTRAP},
		{Stat{State: 'T'}, 0},
		{Stat{State: 'S', ExitCode: 19}, 0},
	} {
		if got := tc.st.StopSignal(); got != tc.want || tc.st.Stopped() != (tc.st.State != 'S') {
			t.Errorf("%c exit_code %d: stop signal %v, stopped %v", tc.st.State, tc.st.ExitCode, got, tc.st.Stopped())
		}
	}
}

func TestKernelThread(t *testing.T) {
	if !(Stat{Flags: 2129984}).KernelThread() {
		t.Error("kthreadd flags not a kernel thread")
	}
	if (Stat{Flags: 4194304}).KernelThread() {
		t.Error("cat flags a kernel thread")
	}
}

func TestEnded(t *testing.T) {
	for _, tt := range []struct {
		stat string
		want bool
	}{
		{"4242 (a.out) R 1 4242 4242 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 777 1000 10", false},
		{"4242 (a.out) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 777 1000 10", false},
		{"4242 (a.out) D 1 4242 4242 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 777 1000 10", false},
		{"4242 (a.out) Z 1 4242 4242 0 -1 4194572 100 0 0 0 5 1 0 0 20 0 1 0 777 0 0", true},
		{"4242 (a.out) X 1 4242 4242 0 -1 4194572 100 0 0 0 5 1 0 0 20 0 1 0 777 0 0", true},
		// A command name holding ") Z " does not make a running process a zombie.
		{"4242 (x) Z y) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 777 1000 10", false},
	} {
		s, err := ParseStat([]byte(tt.stat))
		if err != nil {
			t.Fatalf("ParseStat(%q): %v", tt.stat, err)
		}
		if got := s.Ended(); got != tt.want {
			t.Errorf("ParseStat(%q).Ended() = %v, want %v", tt.stat, got, tt.want)
		}
	}
}

func TestParseStatErrors(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"empty", "", "no command name"},
		{"no parens", "12 cat R 1", "no command name"},
		{"reversed parens", "12 )cat( R 1", "no command name"},
		{"bad pid", "x12 (cat) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "bad pid"},
		{"negative pid", "-12 (cat) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "bad pid"},
		{"short", "12 (cat) R 1 1 1 0 -1 0", "fields after the command name"},
		{"bad state", "12 (cat) RR 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "bad state"},
		{"bad ppid", "12 (cat) R -1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "bad ppid"},
		{"bad flags", "12 (cat) R 1 1 1 0 -1 x 0 0 0 0 0 0 0 0 20 0 1 0 5", "bad flags"},
		{"bad start time", "12 (cat) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5", "bad start time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStat([]byte(tt.line))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("6840 (cat) R 6836 6836 3061 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 23053 3133440 412 18446744073709551615 94389293453312\n"))
	f.Add([]byte("4242 (a) b (c)) Z 1 4242 4242 0 -1 4194316 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n"))
	f.Add([]byte("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 2"))
	f.Add([]byte("1 (\n) S 0"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseStat(data)
		if err != nil {
			return
		}
		if s.PID < 0 || s.PPID < 0 {
			t.Fatalf("negative pid in %+v", s)
		}
		if !strings.Contains(string(data), "("+s.Comm+")") {
			t.Fatalf("comm %q not in parentheses in %q", s.Comm, data)
		}
	})
}
