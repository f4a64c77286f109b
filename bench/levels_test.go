package bench

import (
	"fmt"
	"os"
	"testing"
	"text/tabwriter"
)

// BenchmarkEventLevels measures, side by side in one run, what each event
// level costs per MPI_Allreduce call of 8 B on 2 ranks over vader: the
// job untraced, under `mpiprobe --events default`, and under
// `--events default,messages`. Every call sends and receives one message
// per rank, so the messages level's added time per call is its cost per
// message: the match callback's gate (entry, unpack call site and return)
// on the receive side and mca_btl_vader_sendi's return on the send side.
func BenchmarkEventLevels(b *testing.B) {
	bin, argv := allreduceJob(b, allreduceIters)
	variants := []struct {
		name string
		argv []string
	}{
		{"untraced", argv},
		{"--events default", append([]string{bin, "--events", "default", "--"}, argv...)},
		{"--events default,messages", append([]string{bin, "--events", "default,messages", "--"}, argv...)},
	}
	times := make([][]float64, len(variants))
	for range b.N {
		for i := range pairs {
			// Rotate the order so that no variant always runs first.
			for j := range variants {
				v := (i + j) % len(variants)
				times[v] = append(times[v], workloadSeconds(b, variants[v].argv))
			}
		}
	}
	perCall := func(v int) float64 { return median(times[v]) / allreduceIters * 1e6 }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "MPI_Allreduce 8 B, 2 ranks, vader\truns\tµs per call (median)\tratio to untraced\tadded µs per call\t")
	for v, variant := range variants {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%+.3f\t\n", variant.name, len(times[v]), perCall(v), perCall(v)/perCall(0), perCall(v)-perCall(0))
	}
	tw.Flush()
	fmt.Printf("messages level per message (one sent and one received per rank and call): %+.3f µs\n", perCall(2)-perCall(1))
	b.ReportMetric(perCall(1)/perCall(0), "ratio-default")
	b.ReportMetric(perCall(2)-perCall(1), "µs-messages-level-per-call")
}
