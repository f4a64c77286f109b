package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/mpiprobe/mpiprobe/agg"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// jobsMain runs `mpiprobe jobs`: the job summaries the agent wrote to the
// state directory, newest first. It returns the exit code: 0, 1 on
// failure, 2 on bad usage. A summary that cannot be read is listed with its
// problem; it does not make the command fail.
func jobsMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		stateDir string
		asJSON   bool
	)
	fs := flag.NewFlagSet("mpiprobe jobs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&stateDir, "state-dir", jobstore.DefaultStateDir, "the agent's state `DIR`; the summaries are in DIR/jobs")
	fs.BoolVar(&asJSON, "json", false, "print the list as JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe jobs [flags]\n\n"+
			"Lists the jobs whose summaries `mpiprobe agent` wrote, newest first; `mpiprobe report JOBID`\n"+
			"shows one.\n\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := jobsParse(fs, args)
	if err != nil {
		return jobsFlagCode(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mpiprobe jobs: unexpected argument %s (mpiprobe report JOBID shows one job)\n", text.Echo(pos[0]))
		return 2
	}
	store := jobstore.Store{Dir: jobstore.JobsDir(stateDir)}
	rows, err := report.ListJobs(ctx, store)
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe jobs: %v\n", err)
		return 1
	}
	if len(rows) == 0 {
		none := fmt.Sprintf("no job summaries yet in %s (is mpiprobe agent running? systemctl status mpiprobe)", store.Dir)
		if asJSON {
			fmt.Fprintf(stderr, "mpiprobe jobs: %s\n", none)
			fmt.Fprintf(stdout, "[]\n")
			return 0
		}
		fmt.Fprintf(stdout, "No job summaries yet in %s (is mpiprobe agent running? systemctl status mpiprobe)\n", store.Dir)
		return 0
	}
	if asJSON {
		err = report.WriteJobsJSON(stdout, rows)
	} else {
		err = report.WriteJobs(stdout, rows)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe jobs: %v\n", err)
		return 1
	}
	return 0
}

// reportMain runs `mpiprobe report`: one stored job summary, or the
// summaries of one job from several nodes merged into one. It returns the
// exit code: 0, 1 on failure, 2 on bad usage.
func reportMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		stateDir string
		job      string
		merge    bool
		asJSON   bool
	)
	fs := flag.NewFlagSet("mpiprobe report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&stateDir, "state-dir", jobstore.DefaultStateDir, "the agent's state `DIR`; the summaries are in DIR/jobs")
	fs.BoolVar(&merge, "merge", false, "merge one job's summaries from the given state dirs, jobs dirs or .json files (one per node)")
	fs.StringVar(&job, "job", "", "with --merge: the job `JOBID` to merge (needed when a DIR holds several)")
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpiprobe report [flags] JOBID\n       mpiprobe report --merge [--job JOBID] [--json] DIR|FILE...\n\n"+
			"Shows the summary `mpiprobe agent` wrote for a job (`mpiprobe jobs` lists them). With --merge, reads\n"+
			"the job's summary from each node's state dir, jobs dir or copied .json file and shows them as one.\n\nflags:\n")
		fs.PrintDefaults()
	}
	pos, err := jobsParse(fs, args)
	if err != nil {
		return jobsFlagCode(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var sum agg.Summary
	if merge {
		if set["state-dir"] {
			fmt.Fprintf(stderr, "mpiprobe report: --state-dir does not go with --merge (give the directories to merge as arguments)\n")
			return 2
		}
		if len(pos) == 0 {
			fmt.Fprintf(stderr, "mpiprobe report: --merge needs the nodes' state dirs, jobs dirs or .json files\n")
			return 2
		}
		merged, notes, err := report.MergeNodes(ctx, pos, job)
		if err != nil {
			fmt.Fprintf(stderr, "mpiprobe report: %v\n", err)
			return 1
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "mpiprobe report: note: %s\n", n)
		}
		sum = merged
	} else {
		switch {
		case len(pos) > 1:
			fmt.Fprintf(stderr, "mpiprobe report: give one JOBID, not %d (to merge nodes' summaries: --merge)\n", len(pos))
			return 2
		case len(pos) == 1 && job != "" && job != pos[0]:
			fmt.Fprintf(stderr, "mpiprobe report: two jobs given: %s and --job %s\n", text.Quote(pos[0]), text.Quote(job))
			return 2
		case len(pos) == 1:
			job = pos[0]
		case job == "":
			fmt.Fprintf(stderr, "mpiprobe report: no job: give JOBID (mpiprobe jobs lists them)\n")
			return 2
		}
		store := jobstore.Store{Dir: jobstore.JobsDir(stateDir)}
		data, stored, err := report.LoadJob(store, job)
		var nf *jobstore.NotFoundError
		if errors.As(err, &nf) {
			hint := "mpiprobe jobs"
			if set["state-dir"] {
				hint += " --state-dir " + stateDir
			}
			fmt.Fprintf(stderr, "mpiprobe report: no summary of job %s in %s (%s lists the jobs there)\n", text.Quote(job), store.Dir, hint)
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "mpiprobe report: %v\n", err)
			return 1
		}
		sum = stored
		if asJSON { // as stored: a later agent's fields included
			if _, err := stdout.Write(data); err != nil {
				fmt.Fprintf(stderr, "mpiprobe report: write: %v\n", err)
				return 1
			}
			return 0
		}
	}
	if asJSON {
		err = report.WriteJSON(stdout, sum)
	} else {
		err = report.WriteTable(stdout, sum)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpiprobe report: %v\n", err)
		return 1
	}
	return 0
}

// jobsParse parses args with flags and arguments mixed ("report 12 --json"),
// as far as a "--": it returns the arguments.
func jobsParse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// jobsFlagCode is the exit code after a flag error: 0 for -h, else 2 (the
// flag package has said what was wrong).
func jobsFlagCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
