package bench

import (
	"fmt"
	"testing"
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
	names := []string{"untraced", "--events default", "--events default,messages"}
	argvs := [][]string{
		argv,
		append([]string{bin, "--events", "default", "--"}, argv...),
		append([]string{bin, "--events", "default,messages", "--"}, argv...),
	}
	// Rotate the order so that no variant always runs first.
	t := runPerCall(b, names, allreduceIters, rotated, func(v int) float64 { return workloadSeconds(b, argvs[v]) })
	t.printTable("MPI_Allreduce 8 B, 2 ranks, vader", t.ratioColumn("ratio to untraced"), t.addedColumn("added µs per call"))
	fmt.Printf("messages level per message (one sent and one received per rank and call): %+.3f µs\n", t.us(2)-t.us(1))
	b.ReportMetric(t.us(1)/t.us(0), "ratio-default")
	b.ReportMetric(t.us(2)-t.us(1), "µs-messages-level-per-call")
}
