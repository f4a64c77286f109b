#!/bin/sh
# mpiprobe's Slurm epilog: when a job ends, merge the parts its nodes'
# mpiprobe agents wrote to the shared directory (their --shared-dir, or
# shared_dir in /etc/mpiprobe/config.conf) into one summary of the job,
# stored next to the parts as DIR/<job>/summary.json.
#
# In slurm.conf, either (once per job, on the controller, as SlurmUser):
#     EpilogSlurmctld=/usr/local/libexec/mpiprobe/epilog-mpiprobe.sh
# or (on every node of the job, as root; one node merges, the others
# return at once):
#     Epilog=/usr/local/libexec/mpiprobe/epilog-mpiprobe.sh
# SlurmUser must be able to read the parts and write in the job's
# directory: give DIR its group, set-group-id (chgrp slurm DIR; chmod
# 2770 DIR); the agents' files and job directories take DIR's group.
#
# Settings, read from /etc/default/mpiprobe-epilog (shell variables) or
# the environment:
#     MPIPROBE             the mpiprobe binary (Slurm sets no PATH)
#     MPIPROBE_SHARED_DIR  the agents' shared directory
#     MPIPROBE_WAIT        how long to wait for the nodes' final parts
#     MPIPROBE_GRACE       seconds to wait for a first part before taking
#                          the job for one that ran no MPI
#
# The job is named by its bare id, SLURM_JOB_ID: `mpiprobe report --job ID`
# merges each of the job's steps (the agents file them as ID.STEP). When
# the agents name Slurm jobs CLUSTER:ID.STEP (SLURM_CLUSTER_NAME set), this
# needs report --job to take the bare id for them too (docs/agent.md).
#
# An epilog that fails drains the node: this one always exits 0 and says
# what went wrong on stderr (slurmd's or slurmctld's log).

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
conf=${MPIPROBE_EPILOG_CONF:-/etc/default/mpiprobe-epilog}
if [ -r "$conf" ]; then
	# shellcheck source=/dev/null
	. "$conf"
fi
MPIPROBE=${MPIPROBE:-/usr/local/bin/mpiprobe}
MPIPROBE_SHARED_DIR=${MPIPROBE_SHARED_DIR:-/shared/mpiprobe}
MPIPROBE_WAIT=${MPIPROBE_WAIT:-30s}
MPIPROBE_GRACE=${MPIPROBE_GRACE:-3}

say() {
	echo "mpiprobe epilog: $*" >&2
}

job=${SLURM_JOB_ID:-}
case $job in
'' | *[!0-9]*)
	say "SLURM_JOB_ID is ${job:-not set}, not a job id: run this script as Slurm's Epilog or EpilogSlurmctld"
	exit 0
	;;
esac
if [ ! -x "$MPIPROBE" ]; then
	say "$MPIPROBE is not an executable: set MPIPROBE in $conf"
	exit 0
fi
if [ ! -d "$MPIPROBE_SHARED_DIR" ]; then
	say "$MPIPROBE_SHARED_DIR is not a directory: set MPIPROBE_SHARED_DIR in $conf to the agents' shared_dir"
	exit 0
fi

# Has a node written a part of the job (a directory ID or ID.STEP)?
has_parts() {
	for f in "$MPIPROBE_SHARED_DIR/$job"/*.part.json "$MPIPROBE_SHARED_DIR/$job".*/*.part.json; do
		[ -f "$f" ] && return 0
	done
	return 1
}
waited=0
while ! has_parts; do
	if [ "$waited" -ge "$MPIPROBE_GRACE" ]; then
		exit 0 # no MPI rank of the job was traced
	fi
	sleep 1
	waited=$((waited + 1))
done

# One merge per job: the first epilog to make the lock directory merges.
dir=$MPIPROBE_SHARED_DIR/$job
mkdir -p "$dir" 2>/dev/null
if ! mkdir "$dir/epilog.lock" 2>/dev/null; then
	exit 0
fi
if ! "$MPIPROBE" report --job "$job" --shared-dir "$MPIPROBE_SHARED_DIR" --wait "$MPIPROBE_WAIT" --save --json >/dev/null; then
	say "job $job: mpiprobe report failed (above); the nodes' parts are in $MPIPROBE_SHARED_DIR"
fi
exit 0
