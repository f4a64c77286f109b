package probes

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf/link"
)

// fakeLink counts its Close calls.
type fakeLink struct {
	link.Link
	closed *atomic.Int32
}

func (l fakeLink) Close() error { l.closed.Add(1); return nil }

func TestFileLinks(t *testing.T) {
	var closed atomic.Int32
	mk := func(n int) []link.Link {
		out := make([]link.Link, n)
		for i := range out {
			out[i] = fakeLink{closed: &closed}
		}
		return out
	}
	libmpi := Target{Library: OMPILibMPI, Dev: 1, Inode: 10, Display: "libmpi"}
	asOB1 := Target{Library: OMPIPmlOb1, Dev: 1, Inode: 10, Display: "libmpi as ob1"}
	other := Target{Library: OMPILibMPI, Dev: 1, Inode: 11, Display: "other"}
	skipped := Target{Library: OMPILibMPI, Dev: 2, Inode: 20, Display: "skipped"}
	var s fileLinks
	s.skipFile(2, 20)
	var tried []string
	var hooked []string
	onFile := func(t Target, ls []link.Link) error { hooked = append(hooked, t.Display); return nil }
	attach := func(fail string) func(Target) ([]link.Link, bool, error) {
		return func(t Target) ([]link.Link, bool, error) {
			tried = append(tried, t.Display)
			if t.Display == fail {
				return mk(1), true, errors.New("midway")
			}
			if t.Library == OMPIPmlOb1 {
				return nil, false, nil // not a file this attacher probes
			}
			return mk(2), true, nil
		}
	}
	// Each file once per library, the skipped one never; a file not
	// probed is tried again.
	if err := s.add([]Target{libmpi, libmpi, asOB1, skipped}, onFile, attach("")); err != nil {
		t.Fatal(err)
	}
	if err := s.add([]Target{libmpi, asOB1}, onFile, attach("")); err != nil {
		t.Fatal(err)
	}
	want := []string{"libmpi", "libmpi as ob1", "libmpi as ob1"}
	if len(s.links) != 2 || closed.Load() != 0 || !slices.Equal(tried, want) || !slices.Equal(hooked, []string{"libmpi"}) {
		t.Fatalf("links %d, closed %d, tried %q, hooked %q", len(s.links), closed.Load(), tried, hooked)
	}
	// A failure closes every link of the call, the failing file's too,
	// and leaves its files to be tried again.
	fresh := Target{Library: MPICHLib, Dev: 3, Inode: 30, Display: "fresh"}
	if err := s.add([]Target{fresh, other}, onFile, attach("other")); err == nil {
		t.Fatal("no error")
	}
	if len(s.links) != 2 || closed.Load() != 3 {
		t.Fatalf("after a failure: links %d, closed %d, want 2 and 3", len(s.links), closed.Load())
	}
	// The hook's error fails the file like the attach's.
	hookErr := func(Target, []link.Link) error { return errors.New("pin") }
	if err := s.add([]Target{fresh}, hookErr, attach("")); err == nil || closed.Load() != 5 {
		t.Fatalf("hook error: err %v, closed %d", err, closed.Load())
	}
	if err := s.add([]Target{fresh, other}, nil, attach("")); err != nil || len(s.links) != 6 {
		t.Fatalf("retry: err %v, links %d", err, len(s.links))
	}
	if err := s.closeAtOnce(); err != nil || closed.Load() != 11 || s.links != nil {
		t.Fatalf("closeAtOnce: err %v, closed %d", err, closed.Load())
	}
}
