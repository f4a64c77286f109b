package procfs

import (
	"maps"
	"strings"
	"testing"
)

func TestParseEnviron(t *testing.T) {
	tests := []struct {
		name string
		data string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{
			name: "open mpi rank",
			data: "PATH=/usr/bin:/bin\x00OMPI_COMM_WORLD_RANK=3\x00PMIX_NAMESPACE=prterun-node1-4242@1\x00HOME=/home/alice\x00",
			want: map[string]string{"PATH": "/usr/bin:/bin", "OMPI_COMM_WORLD_RANK": "3", "PMIX_NAMESPACE": "prterun-node1-4242@1", "HOME": "/home/alice"},
		},
		{
			name: "no trailing NUL",
			data: "A=1\x00B=2",
			want: map[string]string{"A": "1", "B": "2"},
		},
		{
			name: "value with '=' and spaces, empty value",
			data: "OPTS=-x=1 -y=2\x00EMPTY=\x00",
			want: map[string]string{"OPTS": "-x=1 -y=2", "EMPTY": ""},
		},
		{
			name: "entries without '=' or key ignored",
			data: "garbage\x00\x00=novalue\x00K=v\x00",
			want: map[string]string{"K": "v"},
		},
		{
			name: "first occurrence wins",
			data: "PMI_RANK=1\x00PMI_RANK=2\x00",
			want: map[string]string{"PMI_RANK": "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseEnviron([]byte(tt.data))
			if got == nil || !maps.Equal(got, tt.want) {
				t.Fatalf("ParseEnviron = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzParseEnviron(f *testing.F) {
	f.Add([]byte("PATH=/usr/bin\x00OMPI_COMM_WORLD_RANK=3\x00"))
	f.Add([]byte("A=1\x00A=2\x00junk\x00=x\x00B="))
	f.Add([]byte("\x00\x00=\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		env := ParseEnviron(data)
		if env == nil {
			t.Fatal("nil map")
		}
		for k, v := range env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
				t.Fatalf("bad entry %q=%q", k, v)
			}
			entry := "\x00" + k + "=" + v
			if !strings.HasPrefix(string(data), k+"="+v) && !strings.Contains(string(data), entry) {
				t.Fatalf("entry %q=%q not in input", k, v)
			}
		}
	})
}
