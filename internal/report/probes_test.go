package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mpiprobe/mpiprobe/probes"
)

func TestWriteProbes(t *testing.T) {
	results := []ProbeResult{
		{PID: 42, Entries: []probes.EntryStatus{
			{Event: "ob1.send_pending.new", Level: "default", Library: "openmpi", File: "/usr/lib/libmpi.so.40", Attached: true,
				Layout: "opal_free_list_t from verified build 85e4"},
			{Event: "ucx.late", Level: "retries", Library: "ucx", Reason: "the process maps no libucp"},
			{Event: "odd", Level: "messages", Library: "openmpi", File: "/tmp/x y\x1b.so", Attached: true, Reason: "1 of 2 symbols\nmissing"},
		}},
		{PID: 43},
	}
	var buf bytes.Buffer
	if err := WriteProbes(&buf, results, 0); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"pid 42: 2 of 3 entries attached\n",
		"│ ob1.send_pending.new │ default  │ openmpi │ attached    │ /usr/lib/libmpi.so.40 (opal_free_list_t from verified build 85e4) │",
		"│ ucx.late             │ retries  │ ucx     │ unavailable │ the process maps no libucp ",
		`│ odd                  │ messages │ openmpi │ attached    │ "/tmp/x y\x1b.so" (partly: 1 of 2 symbols missing) `,
		"\npid 43: 0 of 0 entries attached\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, '\x1b') {
		t.Errorf("output holds an escape character:\n%s", out)
	}

	buf.Reset()
	if err := WriteProbesJSON(&buf, results); err != nil {
		t.Fatal(err)
	}
	var back struct {
		SchemaVersion int    `json:"schema_version"`
		Kind          string `json:"kind"`
		Processes     []struct {
			PID           int               `json:"pid"`
			AttachedCount int               `json:"attached_count"`
			Entries       []json.RawMessage `json:"entries"`
		} `json:"processes"`
	}
	err := json.Unmarshal(buf.Bytes(), &back)
	if err != nil || back.SchemaVersion != 1 || back.Kind != "probes" || len(back.Processes) != 2 ||
		back.Processes[0].PID != 42 || len(back.Processes[0].Entries) != 3 {
		t.Errorf("JSON: %+v, %v\n%s", back, err, buf.String())
	}
	for _, key := range []string{`"attached": true`, `"event": `, `"library": `} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, buf.String())
		}
	}
}
