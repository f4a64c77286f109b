package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpiprobe/mpiprobe/agg"
	configfile "github.com/mpiprobe/mpiprobe/internal/config"
	"github.com/mpiprobe/mpiprobe/internal/jobstore"
	"github.com/mpiprobe/mpiprobe/internal/report"
	"github.com/mpiprobe/mpiprobe/internal/text"
)

// newJobsCmd builds `mpiprobe jobs`: the job summaries the agent wrote to
// the state directory, newest first. A summary that cannot be read is
// listed with its problem; it does not make the command fail.
func newJobsCmd() *cobra.Command {
	var (
		stateDir string
		asJSON   bool
	)
	c := &cobra.Command{
		Use:   "jobs [flags]",
		Short: "the job summaries the agent wrote",
		Long: "Lists the jobs whose summaries `mpiprobe agent` wrote, newest first; `mpiprobe report JOBID`\n" +
			"shows one. `mpiprobe ps` lists the MPI jobs running now.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %s (mpiprobe report JOBID shows one job)", text.Echo(args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
			if err := checkStateDir(stateDir); err != nil {
				return err
			}
			store := jobstore.Store{Dir: jobstore.JobsDir(stateDir)}
			rows, err := report.ListJobs(c.Context(), store)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				none := fmt.Sprintf("no job summaries yet in %s (is mpiprobe agent running? systemctl status mpiprobe)", store.Dir)
				if asJSON {
					fmt.Fprintf(stderr, "mpiprobe jobs: %s\n", none)
					return report.WriteJobsJSON(stdout, nil)
				}
				fmt.Fprintf(stdout, "No job summaries yet in %s (is mpiprobe agent running? systemctl status mpiprobe)\n", store.Dir)
				return nil
			}
			if asJSON {
				return report.WriteJobsJSON(stdout, rows)
			}
			return report.WriteJobs(stdout, rows)
		},
	}
	fs := c.Flags()
	fs.StringVar(&stateDir, "state-dir", jobstore.DefaultStateDir, "the agent's state `DIR`; the summaries are in DIR/jobs")
	fs.BoolVar(&asJSON, "json", false, "print the list as JSON")
	return c
}

// newReportCmd builds `mpiprobe report`: one stored job summary, or the
// summaries of one job from several nodes merged into one.
func newReportCmd() *cobra.Command {
	var (
		stateDir string
		job      string
		merge    bool
		asJSON   bool
		shared   string
		wait     time.Duration
		save     bool
	)
	c := &cobra.Command{
		Use:   "report [flags] JOBID | report --merge [--job JOBID] [--json] DIR|FILE... | report --job JOBID --shared-dir DIR",
		Short: "one job's summary, or several nodes' merged",
		Long: "Shows the summary `mpiprobe agent` wrote for a job (`mpiprobe jobs` lists them). With --merge, reads\n" +
			"the job's summary from each node's state dir, jobs dir or copied .json file and shows them as one.\n" +
			"With --shared-dir, merges the parts the nodes' agents wrote to that shared directory (their --shared-dir).",
		RunE: func(c *cobra.Command, pos []string) error {
			stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
			stateSet := c.Flags().Changed("state-dir")
			var sum agg.Summary
			if shared != "" {
				switch {
				case merge || stateSet:
					return usagef("--shared-dir does not go with --merge or --state-dir (it reads the parts the agents wrote there)")
				case len(pos) > 0:
					return usagef("unexpected argument %s with --shared-dir: give the job with --job JOBID", text.Echo(pos[0]))
				case job == "":
					return usagef("--shared-dir needs --job JOBID (ls %s lists the jobs there)", shared)
				}
				return reportShared(c, jobstore.Shared{Dir: shared}, job, wait, save, asJSON)
			}
			if wait != 0 || save {
				return usagef("--wait and --save go with --shared-dir")
			}
			if merge {
				if stateSet {
					return usagef("--state-dir does not go with --merge (give the directories to merge as arguments)")
				}
				if len(pos) == 0 {
					return usagef("--merge needs the nodes' state dirs, jobs dirs or .json files")
				}
				merged, notes, err := report.MergeNodes(c.Context(), pos, job)
				if err != nil {
					return err
				}
				for _, n := range notes {
					fmt.Fprintf(stderr, "mpiprobe report: note: %s\n", n)
				}
				sum = merged
			} else {
				switch {
				case len(pos) > 1:
					return usagef("give one JOBID, not %d (to merge nodes' summaries: --merge)", len(pos))
				case len(pos) == 1 && job != "" && job != pos[0]:
					return usagef("two jobs given: %s and --job %s", text.Quote(pos[0]), text.Quote(job))
				case len(pos) == 1:
					job = pos[0]
				case job == "":
					return usagef("no job: give JOBID (mpiprobe jobs lists them)")
				}
				if err := checkStateDir(stateDir); err != nil {
					return err
				}
				store := jobstore.Store{Dir: jobstore.JobsDir(stateDir)}
				data, stored, err := report.LoadJob(store, job)
				var nf *jobstore.NotFoundError
				if errors.As(err, &nf) {
					hint := "mpiprobe jobs"
					if stateSet {
						hint += " --state-dir " + stateDir
					}
					return fmt.Errorf("no summary of job %s in %s (%s lists the jobs there)", text.Quote(job), store.Dir, hint)
				}
				if err != nil {
					return err
				}
				sum = stored
				if asJSON && report.IsCurrent(data) { // as stored: a later agent's fields included
					if _, err := stdout.Write(data); err != nil {
						return fmt.Errorf("write: %w", err)
					}
					return nil
				}
			}
			if asJSON {
				return report.WriteJSON(stdout, sum)
			}
			return report.WriteTable(stdout, sum)
		},
	}
	fs := c.Flags()
	fs.StringVar(&stateDir, "state-dir", jobstore.DefaultStateDir, "the agent's state `DIR`; the summaries are in DIR/jobs")
	fs.BoolVar(&merge, "merge", false, "merge one job's summaries from the given state dirs, jobs dirs or .json files (one per node)")
	fs.StringVar(&job, "job", "", "with --merge: the job `JOBID` to merge (needed when a DIR holds several); with --shared-dir: the job (a Slurm job's bare id takes each of its steps)")
	fs.StringVar(&shared, "shared-dir", "", "merge the parts of --job that the nodes' agents wrote to the shared `DIR` (the agents' --shared-dir)")
	fs.DurationVar(&wait, "wait", 0, "with --shared-dir: read the parts again for up to `DURATION` until every node of the job's node list wrote its final part")
	fs.BoolVar(&save, "save", false, "with --shared-dir: also store the merged summary (JSON) as summary.json in the job's directory there")
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return c
}

// reportShared shows job merged from the parts in shared, waiting up to
// wait for the missing and running nodes' final parts; with save it stores
// the merged summary next to the parts. A part that does not read is
// named on stderr, one line each.
func reportShared(c *cobra.Command, shared jobstore.Shared, job string, wait time.Duration, save, asJSON bool) error {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	if fi, err := os.Stat(shared.Dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("shared dir %s is not a directory: give the agents' --shared-dir (shared_dir in %s)", shared.Dir, configfile.DefaultPath)
	}
	deadline := time.Now().Add(wait)
	var (
		ss  report.SharedSummary
		err error
	)
	for {
		ss, err = report.ReadShared(c.Context(), shared, job)
		if (err == nil && !ss.Partial) || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-c.Context().Done():
			return c.Context().Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	for _, s := range ss.Skipped {
		fmt.Fprintf(stderr, "mpiprobe report: skipped the part %s: %s (its node's agent writes it again while the job runs; otherwise remove it)\n", s.File, s.Err)
	}
	for _, n := range ss.Notes {
		fmt.Fprintf(stderr, "mpiprobe report: note: %s\n", n)
	}
	var js bytes.Buffer
	if err := report.WriteSharedJSON(&js, ss); err != nil {
		return err
	}
	if save {
		if err := shared.SaveSummary(job, js.Bytes()); err != nil {
			return err
		}
	}
	if asJSON {
		if _, err := stdout.Write(js.Bytes()); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	}
	return report.WriteShared(stdout, ss)
}

// checkStateDir says, in one line naming it and where the agent's is set,
// why dir is no state dir to read: it does not exist (a mistyped --state-dir,
// or an agent with another one) or is not a directory; nil when it is one.
// A state dir without its jobs directory is one where no job ended yet.
func checkStateDir(dir string) error {
	fix := "give the agent's state dir with --state-dir DIR (the agent's --state-dir, or state_dir in " + configfile.DefaultPath + ")"
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("state dir %s does not exist: %s", dir, fix)
	case err != nil:
		return fmt.Errorf("state dir: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("state dir %s is not a directory: %s", dir, fix)
	}
	return nil
}
