package status

import (
	"reflect"
	"testing"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/mpiabi"
	"github.com/mpiprobe/mpiprobe/internal/status/hang"
)

// TestHangWaits checks that the requests mpiabi reads reach package hang
// with their special values spelled as hang spells them.
func TestHangWaits(t *testing.T) {
	if hangWaits(nil) != nil {
		t.Error("hangWaits(nil) is not nil")
	}
	c := mpiabi.Comm{ID: 3, Size: 4}
	got := hangWaits([]mpiabi.Request{
		{Peer: mpiabi.AnySource, CommPeer: -1, Tag: mpiabi.AnyTag, Known: true},
		{Send: true, Peer: mpiabi.PeerUnknown, CommPeer: 2, Tag: mpiabi.TagUnknown, Comm: &c},
		{Peer: 1, CommPeer: -1, Tag: 7, Known: true},
	})
	want := []hang.Wait{
		{Peer: hang.AnySource, CommPeer: -1, Tag: hang.AnyTag, Known: true},
		{Send: true, Peer: hang.PeerUnknown, CommPeer: 2, Tag: hang.TagUnknown, Comm: &agg.Comm{ID: 3, Size: 4}},
		{Peer: 1, CommPeer: -1, Tag: 7, Known: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hangWaits = %+v, want %+v", got, want)
	}
}
