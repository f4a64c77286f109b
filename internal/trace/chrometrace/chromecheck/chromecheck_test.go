package chromecheck

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const name = `{"ph":"M","cat":"__metadata","name":"process_name","pid":1,"tid":0,"ts":0,"args":{"name":"rank 0"}}`
	doc := func(events ...string) string {
		return `{"otherData":{"x":[1,2]},"traceEvents":[` + strings.Join(append([]string{name}, events...), ",") + `]}`
	}
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"good", doc(`{"ph":"X","cat":"c","name":"MPI_Send","pid":1,"tid":5,"ts":1.5,"dur":2,"args":{"site":"a.c:3"}}`,
			`{"ph":"X","cat":"c","name":"MPI_Recv","pid":1,"tid":5,"ts":3.5,"dur":1}`,
			`{"ph":"M","cat":"__metadata","name":"thread_name","pid":1,"tid":5,"args":{"name":"thread 5"}}`), ""},
		{"nested", doc(`{"ph":"X","cat":"c","name":"o","pid":1,"tid":5,"ts":1,"dur":10}`, `{"ph":"X","cat":"c","name":"i","pid":1,"tid":5,"ts":2,"dur":3}`), ""},
		{"B/E", doc(`{"ph":"B","cat":"c","name":"o","pid":1,"tid":5,"ts":1}`, `{"ph":"E","cat":"c","pid":1,"tid":5,"ts":4}`), ""},
		{"overlap", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":1,"dur":10}`, `{"ph":"X","cat":"c","name":"b","pid":1,"tid":5,"ts":5,"dur":10}`), "overlaps"},
		{"other tracks may overlap", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":1,"dur":10}`, `{"ph":"X","cat":"c","name":"b","pid":1,"tid":6,"ts":5,"dur":10}`), ""},
		{"negative dur", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":1,"dur":-1}`), "negative dur"},
		{"no dur", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":1}`), "no dur"},
		{"no ts", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"dur":1}`), "no ts"},
		{"string ts", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":"1","dur":1}`), "not a number"},
		{"fractional pid", doc(`{"ph":"X","cat":"c","name":"a","pid":0.5,"tid":5,"ts":1,"dur":1}`), "not an integer"},
		{"no name", doc(`{"ph":"X","cat":"c","pid":1,"tid":5,"ts":1,"dur":1}`), "without a name"},
		{"no ph", doc(`{"cat":"c","name":"a","pid":1,"tid":5,"ts":1,"dur":1}`), "no ph"},
		{"unknown phase", doc(`{"ph":"Q","cat":"c","name":"a","pid":1,"tid":5,"ts":1}`), "phase"},
		{"args not object", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":1,"dur":1,"args":3}`), "args is not an object"},
		{"unnamed process", doc(`{"ph":"X","cat":"c","name":"a","pid":2,"tid":5,"ts":1,"dur":1}`), "no process_name"},
		{"bad metadata", doc(`{"ph":"M","cat":"__metadata","name":"process_name","pid":1,"tid":0,"args":{"title":"x"}}`), "args.name"},
		{"numeric name", doc(`{"ph":"M","cat":"__metadata","name":"thread_name","pid":1,"tid":2,"args":{"name":3}}`), "args.name"},
		{"string sort index", doc(`{"ph":"M","cat":"__metadata","name":"process_sort_index","pid":1,"tid":0,"args":{"sort_index":"3"}}`), "args.sort_index"},
		{"pid 0", `{"traceEvents":[{"ph":"M","cat":"__metadata","name":"process_name","pid":0,"tid":0,"args":{"name":"rank 0"}}]}`, "pids from 1"},
		{"no cat", doc(`{"ph":"X","name":"a","pid":1,"tid":5,"ts":1,"dur":1}`), "no string cat"},
		{"metadata without cat", doc(`{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"t"}}`), "no string cat"},
		{"numeric cat", doc(`{"ph":"X","cat":3,"name":"a","pid":1,"tid":5,"ts":1,"dur":1}`), "no string cat"},
		{"negative ts", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":-1,"dur":1}`), "negative ts"},
		{"negative metadata ts", doc(`{"ph":"M","cat":"__metadata","name":"thread_name","pid":1,"tid":2,"ts":-1,"args":{"name":"t"}}`), "negative ts"},
		{"process name without tid", doc(`{"ph":"M","cat":"__metadata","name":"process_name","pid":1,"args":{"name":"t"}}`), "no tid"},
		{"thread name without tid", doc(`{"ph":"M","cat":"__metadata","name":"thread_name","pid":1,"args":{"name":"t"}}`), "no tid"},
		{"unknown metadata", doc(`{"ph":"M","cat":"__metadata","name":"colour","pid":1,"tid":0,"args":{}}`), "unknown metadata"},
		{"E without B", doc(`{"ph":"E","cat":"c","pid":1,"tid":5,"ts":4}`), "without a B"},
		{"B without E", doc(`{"ph":"B","cat":"c","name":"o","pid":1,"tid":5,"ts":1}`), "without their E"},
		{"truncated", doc(`{"ph":"X","cat":"c","name":"a","pid":1,"tid":5,"ts":1,"dur":1}`)[:60], "invalid"},
		{"trailing comma", `{"traceEvents":[` + name + `,]}`, "invalid"},
		{"no events", `{"other":1}`, "no \"traceEvents\""},
		{"trailing data", doc() + "{}", "data after"},
	} {
		_, err := Check(strings.NewReader(tc.doc))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}
