// Package dist holds what deploys mpiprobe besides the binary:
//
//   - mpiprobe.service, the systemd unit of the node-wide agent
//     (`mpiprobe agent`), a template whose @BINDIR@ and @DOCDIR@ the
//     Makefile replaces; `make install` installs it;
//   - prometheus/alerts.yml, alerting rules on the agent's metrics, with
//     their unit tests in prometheus/alerts_test.yml;
//   - grafana/mpiprobe.json, a Grafana dashboard of the agent's metrics,
//     its data source an input (${DS_PROMETHEUS}) chosen at import;
//   - slurm/epilog-mpiprobe.sh, a Slurm epilog (Epilog= or
//     EpilogSlurmctld=) that merges the parts of a finished job that the
//     nodes' agents wrote to their shared directory (--shared-dir) and
//     stores the merged summary next to them.
//
// The package has no code. Its tests install into a temporary root with
// the real make and check the unit with systemd-analyze; run promtool on
// the rules and their unit tests; and check that every event of the
// default catalog has a rule, that the PromQL examples of docs/metrics.md
// are tested, and that the dashboard queries only the agent's metrics;
// and run shellcheck on the epilog and the epilog itself, with the
// environment slurmctld gives it, over parts written as the agents write
// them.
package dist
