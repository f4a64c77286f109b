package probes

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
)

func TestBuiltinCatalogsValidate(t *testing.T) {
	for name, cat := range map[string]Catalog{"Full": Full(), "DefaultCatalog": DefaultCatalog()} {
		t.Run(name, func(t *testing.T) {
			if len(cat.Events) == 0 {
				t.Fatal("no events")
			}
			if err := cat.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			for id, e := range cat.Events {
				if e.Layer == "" || e.Advice == "" {
					t.Errorf("event %q: needs a layer and advice", e.ID)
				}
				if e.C == 0 || e.T <= 0 {
					t.Errorf("event %q: C = %d, T = %v, want both positive", e.ID, e.C, e.T)
				}
				// Validate does not check condition ranges; Cookie, called at
				// attach time, does: every probe must pack.
				for _, p := range e.Probes {
					if _, err := Cookie(id, p.Cond); err != nil {
						t.Errorf("event %q: %s: %v", e.ID, p, err)
					}
				}
			}
		})
	}
}

func TestCatalogLevels(t *testing.T) {
	full := Full()
	for _, e := range full.Events {
		if e.Level != Default && e.Level != Retries && e.Level != Messages {
			t.Errorf("Full: event %q has level %q, want %q, %q or %q", e.ID, e.Level, Default, Retries, Messages)
		}
	}
	if got, want := full.Levels(), []Level{Default, Retries, Messages}; !slices.Equal(got, want) {
		t.Errorf("Full().Levels() = %v, want %v", got, want)
	}

	def := DefaultCatalog()
	for _, e := range def.Events {
		if e.Level != Default {
			t.Errorf("DefaultCatalog: event %q has level %q", e.ID, e.Level)
		}
	}
	if got, want := def.Levels(), []Level{Default}; !slices.Equal(got, want) {
		t.Errorf("DefaultCatalog().Levels() = %v, want %v", got, want)
	}
	if len(def.Events) >= len(full.Events) {
		t.Errorf("DefaultCatalog has %d events, Full %d: the retries level must be opt-in", len(def.Events), len(full.Events))
	}
	// The default catalog is Full's default events, in the same order.
	var want []string
	for _, e := range full.Events {
		if e.Level == Default {
			want = append(want, e.ID)
		}
	}
	if got := eventIDs(def); !slices.Equal(got, want) {
		t.Errorf("DefaultCatalog ids = %v, want %v", got, want)
	}
	// The hot loop (every progress pass) must never be probed by default.
	for _, e := range def.Events {
		for _, p := range e.Probes {
			if p.Symbol == "mca_pml_ob1_progress" {
				t.Errorf("DefaultCatalog: event %q probes the hot %s", e.ID, p)
			}
		}
	}
}

func eventIDs(c Catalog) []string {
	var ids []string
	for _, e := range c.Events {
		ids = append(ids, e.ID)
	}
	return ids
}

// validEvent returns a minimal event that Validate accepts.
func validEvent(id string) Event {
	return Event{
		ID:      id,
		Layer:   "pml",
		Level:   Default,
		Probes:  []Probe{{Library: OMPIPmlOb1, Symbol: "f"}},
		Message: "something happened",
		C:       1,
		T:       time.Second,
	}
}

func TestValidateAccepts(t *testing.T) {
	probe := func(p Probe) Catalog {
		e := validEvent("a.b")
		e.Probes = []Probe{p}
		return Catalog{Events: []Event{e}}
	}
	tests := []struct {
		name string
		cat  Catalog
	}{
		{"empty catalog", Catalog{}},
		{"one event", Catalog{Events: []Event{validEvent("a.b")}}},
		{"dotted id with digits and underscores", Catalog{Events: []Event{validEvent("ob1.send_pending.new2")}}},
		{"two events", Catalog{Events: []Event{validEvent("a.b"), validEvent("a.c")}}},
		{"return-value condition on return", probe(Probe{Library: OMPILibMPI, Symbol: "f", Side: Return, Cond: Condition{Src: RetVal, Cmp: Lt, Value: 0}})},
		{"argument condition on entry", probe(Probe{Library: OMPILibMPI, Symbol: "f", Cond: Condition{Src: Arg(2), Cmp: Ne, Value: 0}})},
		{"unconditional return", probe(Probe{Library: OMPILibMPI, Symbol: "f", Side: Return})},
		{"always on return ignores the source", probe(Probe{Library: OMPILibMPI, Symbol: "f", Side: Return, Cond: Condition{Src: Arg(1), Cmp: Always}})},
		{"call site with argument condition", probe(Probe{Library: OMPIPmlOb1, Symbol: "f", CallTo: "g", Cond: Condition{Src: Arg(1), Cmp: Gt}})},
		{"MaxEvents events", func() Catalog {
			c := Catalog{Events: make([]Event, maxEvents)}
			for i := range c.Events {
				c.Events[i] = validEvent("e.n" + strconv.Itoa(i))
			}
			return c
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cat.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	with := func(f func(*Event)) Catalog {
		e := validEvent("a.b")
		f(&e)
		return Catalog{Events: []Event{e}}
	}
	withProbe := func(p Probe) Catalog {
		return with(func(e *Event) { e.Probes = []Probe{{Library: OMPILibMPI, Symbol: "ok"}, p} })
	}
	tests := []struct {
		name    string
		cat     Catalog
		wantErr string
	}{
		{"empty id", with(func(e *Event) { e.ID = "" }), "want dotted lowercase words"},
		{"id without a dot", with(func(e *Event) { e.ID = "pending" }), "want dotted lowercase words"},
		{"id with capitals", with(func(e *Event) { e.ID = "ob1.Pending" }), "want dotted lowercase words"},
		{"id with a space", with(func(e *Event) { e.ID = "ob1.send pending" }), "want dotted lowercase words"},
		{"id with a dash", with(func(e *Event) { e.ID = "ob1.send-pending" }), "want dotted lowercase words"},
		{"id with an empty word", with(func(e *Event) { e.ID = "ob1..pending" }), "want dotted lowercase words"},
		{"id ending in a dot", with(func(e *Event) { e.ID = "ob1.pending." }), "want dotted lowercase words"},
		{"id starting with a dot", with(func(e *Event) { e.ID = ".ob1.pending" }), "want dotted lowercase words"},
		{"duplicate id", Catalog{Events: []Event{validEvent("a.b"), validEvent("a.c"), validEvent("a.b")}}, `event "a.b" defined twice`},
		{"no probes", with(func(e *Event) { e.Probes = nil }), "at least one probe"},
		{"no message", with(func(e *Event) { e.Message = "" }), "needs a message"},
		{"no level", with(func(e *Event) { e.Level = "" }), "a level"},
		{
			"argument condition on return",
			withProbe(Probe{Library: OMPILibMPI, Symbol: "f", Side: Return, Cond: Condition{Src: Arg(1), Cmp: Eq, Value: 1}}),
			"arguments are gone on return",
		},
		{
			"return-value condition on entry",
			withProbe(Probe{Library: OMPILibMPI, Symbol: "f", Side: Entry, Cond: Condition{Src: RetVal, Cmp: Lt, Value: 0}}),
			"no return value on entry",
		},
		{
			"return-value condition at a call site",
			withProbe(Probe{Library: OMPIPmlOb1, Symbol: "f", CallTo: "g", Cond: Condition{Src: RetVal, Cmp: Ne}}),
			"no return value on entry",
		},
		{
			"call site on the return side",
			withProbe(Probe{Library: OMPIPmlOb1, Symbol: "f", CallTo: "g", Side: Return}),
			"a call site has no return side",
		},
		{
			"free-list program with a condition",
			withProbe(Probe{Library: OMPIPal, Symbol: "opal_free_list_grow_st", Program: FreeListGrow, Cond: Condition{Src: Arg(2), Cmp: Gt, Value: 1}}),
			"operand bits carry the library's free-list layout",
		},
		{"too many events", Catalog{Events: make([]Event, maxEvents+1)}, "at most 65536 fit in a cookie"},
		{"a gate of two events", func() Catalog {
			a, b := validEvent("a.b"), validEvent("a.c")
			a.Probes = []Probe{{Library: OMPIPmlOb1, Symbol: "f", Program: GateOpen, Param: 3}}
			b.Probes = []Probe{{Library: OMPIPmlOb1, Symbol: "g", Side: Return, Program: GateCount, Param: 3}}
			return Catalog{Events: []Event{a, b}}
		}(), `gate 3 is event "a.b"'s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cat.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateBadEventAfterGoodOnes(t *testing.T) {
	bad := validEvent("c.d")
	bad.Message = ""
	cat := Catalog{Events: []Event{validEvent("a.b"), bad}}
	err := cat.Validate()
	if err == nil || !strings.Contains(err.Error(), `"c.d"`) {
		t.Errorf("Validate = %v, want an error naming event \"c.d\"", err)
	}
}

func TestLookup(t *testing.T) {
	full := Full()
	for i, e := range full.Events {
		got, idx, ok := full.Lookup(e.ID)
		if !ok || idx != i || got.ID != e.ID {
			t.Errorf("Lookup(%q) = (%q, %d, %v), want (%q, %d, true)", e.ID, got.ID, idx, ok, e.ID, i)
		}
	}
	for _, id := range []string{"", "ob1", "ob1.send_pending", "OB1.SEND_PENDING.NEW", "ob1.send_pending.new "} {
		got, idx, ok := full.Lookup(id)
		if ok || idx != -1 || got.ID != "" {
			t.Errorf("Lookup(%q) = (%q, %d, %v), want (\"\", -1, false)", id, got.ID, idx, ok)
		}
	}
	// The index is the id the BPF side counts under, so it follows the
	// catalog the lookup is made in.
	def := DefaultCatalog()
	if _, _, ok := full.Lookup("ob1.send_pending.retry"); !ok {
		t.Error("Full has no ob1.send_pending.retry")
	}
	if _, _, ok := def.Lookup("ob1.send_pending.retry"); ok {
		t.Error("DefaultCatalog has the retry event")
	}
	if _, i, ok := def.Lookup("ob1.send_pending.drain"); !ok || i != 1 {
		t.Errorf("DefaultCatalog.Lookup(drain) = (%d, %v), want (1, true)", i, ok)
	}
}

func TestSelect(t *testing.T) {
	cat := Catalog{Events: []Event{
		{ID: "a.one", Level: Default},
		{ID: "a.two", Level: Retries},
		{ID: "a.three", Level: "deep"},
		{ID: "a.four", Level: Default},
		{ID: "a.five", Level: Retries},
	}}
	tests := []struct {
		name   string
		levels []Level
		want   []string
	}{
		{"none", nil, nil},
		{"default", []Level{Default}, []string{"a.one", "a.four"}},
		{"retries", []Level{Retries}, []string{"a.two", "a.five"}},
		{"catalog order, not argument order", []Level{Retries, Default}, []string{"a.one", "a.two", "a.four", "a.five"}},
		{"all", []Level{"deep", Retries, Default}, []string{"a.one", "a.two", "a.three", "a.four", "a.five"}},
		{"repeated level", []Level{Default, Default}, []string{"a.one", "a.four"}},
		{"unknown level", []Level{"nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventIDs(cat.Select(tt.levels...)); !slices.Equal(got, tt.want) {
				t.Errorf("Select(%v) = %v, want %v", tt.levels, got, tt.want)
			}
		})
	}
	if got := eventIDs(cat); len(got) != 5 {
		t.Errorf("Select changed the catalog: %v", got)
	}
}

func TestLevels(t *testing.T) {
	tests := []struct {
		name string
		cat  Catalog
		want []Level
	}{
		{"empty", Catalog{}, nil},
		{"first-use order without duplicates", Catalog{Events: []Event{
			{Level: Retries}, {Level: Default}, {Level: Retries}, {Level: "deep"}, {Level: Default},
		}}, []Level{Retries, Default, "deep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cat.Levels(); !slices.Equal(got, tt.want) {
				t.Errorf("Levels() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLibraries(t *testing.T) {
	p := func(l Library) Probe { return Probe{Library: l, Symbol: "f"} }
	tests := []struct {
		name string
		cat  Catalog
		want []Library
	}{
		{"empty", Catalog{}, nil},
		{"first-use order across events without duplicates", Catalog{Events: []Event{
			{Probes: []Probe{p(OMPIPmlOb1), p(OMPIPmlOb1)}},
			{Probes: []Probe{p(MPICHLib), p(OMPIPmlOb1), p(OMPILibMPI)}},
			{Probes: []Probe{p(OMPILibMPI), p("mca_btl_tcp"), p(MPICHLib)}},
		}}, []Library{OMPIPmlOb1, MPICHLib, OMPILibMPI, "mca_btl_tcp"}},
		{"Full", Full(), []Library{OMPIPmlOb1, OMPIBtlVader, OMPIBtlSm, OMPIBtlTcp, IBVerbs, OMPIPal, UCXLib, OMPILibMPI, MPICHLib}},
		{"DefaultCatalog", DefaultCatalog(), []Library{OMPIPmlOb1, IBVerbs, UCXLib, OMPILibMPI, MPICHLib}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cat.Libraries(); !slices.Equal(got, tt.want) {
				t.Errorf("Libraries() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestProbeString(t *testing.T) {
	tests := []struct {
		p    Probe
		want string
	}{
		{Probe{Symbol: "f"}, "f (entry)"},
		{Probe{Symbol: "f", Side: Return}, "f (return)"},
		{Probe{Symbol: "f", CallTo: "g"}, "f→g"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestValidateProgramSides(t *testing.T) {
	ev := func(p Probe) Catalog {
		return Catalog{Events: []Event{{ID: "x.y", Message: "m", Level: Default, Probes: []Probe{p}}}}
	}
	tests := []struct {
		name string
		p    Probe
		want string
	}{
		{"at max on return", Probe{Library: OMPIPal, Symbol: "f", Side: Return, Program: FreeListAtMax}, "runs on an entry"},
		{"grow on return", Probe{Library: OMPIPal, Symbol: "f", Side: Return, Program: FreeListGrow}, "runs on an entry"},
		{"stash slot 4", Probe{Library: OMPIPal, Symbol: "f", Program: Stash, Param: 4, Cond: Condition{Src: Arg(1)}}, "stash slot 4"},
		{"stash without argument", Probe{Library: OMPIPal, Symbol: "f", Program: Stash}, "keeps an argument"},
		{"gate 64", Probe{Library: OMPIPal, Symbol: "f", Program: GateOpen, Param: 64}, "gate 64"},
		{"error layout 0", Probe{Library: OMPILibMPI, Symbol: "f", Program: MPIError}, "error layout 0"},
		{"peak source 6", Probe{Library: OMPILibMPI, Symbol: "f", Param: 6}, "peak source 6"},
		{"unknown program", Probe{Library: OMPILibMPI, Symbol: "f", Program: GateClose + 1}, "unknown program"},
		{"valid stash", Probe{Library: OMPIPal, Symbol: "f", Program: Stash, Param: 3, Cond: Condition{Src: Arg(2)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ev(tt.p).Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestProducedBy: the default catalog's events a process of each MPI can
// produce; an MPICH process maps libibverbs (through UCX) but never runs
// Open MPI's ob1 or openib code.
func TestProducedBy(t *testing.T) {
	want := map[mpiabi.Flavour][]string{
		mpiabi.MPICH: {"ucx.pending_add", "mpi.error"},
		mpiabi.OpenMPI: {"ob1.send_pending.new", "ob1.send_pending.drain", "ob1.rndv.stall", "ob1.pckt_pending.drain",
			"ob1.recv_pending.drain", "ob1.rdma_pending.drain", "ob1.out_of_sequence", "openib.srq_limit", "openib.srq_grown",
			"ucx.pending_add", "mpi.error"},
	}
	cat := DefaultCatalog()
	want[mpiabi.NoFlavour] = nil
	for _, e := range cat.Events {
		want[mpiabi.NoFlavour] = append(want[mpiabi.NoFlavour], e.ID)
	}
	for fl, ids := range want {
		var got []string
		for _, e := range cat.Events {
			if e.ProducedBy(fl) {
				got = append(got, e.ID)
			}
		}
		if !slices.Equal(got, ids) {
			t.Errorf("%s: %v, want %v", fl, got, ids)
		}
	}
	for lib, fl := range map[Library]mpiabi.Flavour{OMPIPmlOb1: mpiabi.OpenMPI, OMPIPal: mpiabi.OpenMPI, MPICHFortran: mpiabi.MPICH, UCXLib: mpiabi.NoFlavour, IBVerbs: mpiabi.NoFlavour} {
		if got := lib.MPI(); got != fl {
			t.Errorf("%s.MPI() = %s, want %s", lib, got, fl)
		}
	}
}
