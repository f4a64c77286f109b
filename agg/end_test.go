package agg

import (
	"testing"
)

func TestEndString(t *testing.T) {
	tests := []struct {
		end  End
		want string
	}{
		{End{}, "running"},
		{End{Kind: Exited}, "exit 0"},
		{End{Kind: Exited, Code: 137}, "exit 137"},
		{End{Kind: Signaled, Signal: 9}, "killed by SIGKILL"},
		{End{Kind: Signaled, Signal: 11}, "killed by SIGSEGV"},
		{End{Kind: Signaled, Signal: 200}, "killed by signal 200"},
		{End{Kind: Vanished}, "exit status unknown"},
		{End{Kind: Signaled, Signal: 9, MPIAbort: true, AbortCode: 7}, "MPI_Abort(7), killed by SIGKILL"},
		{End{Kind: Exited, Code: 7, MPIAbort: true, AbortCode: 7}, "MPI_Abort(7), exit 7"},
		{End{Kind: EndKind(42)}, "exit status unknown"},
	}
	for _, tc := range tests {
		if got := tc.end.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.end, got, tc.want)
		}
	}
}
